# mk/cuda.mk: the CUDA kernels of the cuda-* plugins (included by Makefile).
#
#   make cuda-kernels        fatbins + manifests, embedded by `go build -tags cuda`
#   make cuda-check-compile  every .cu (examples/cuda too) compiles for sm_80, sm_89 and sm_90 (CI)
#   make cuda-ptxas-report   registers, spills and shared memory per kernel
#   make cuda-clean          remove the build outputs below
#
# Build outputs (git-ignored): plugins/cuda-*/kernel.fatbin{,.json},
# plugins/cuda-*/kernel.ptxas.txt, internal/gpu/kernels/timing.fatbin{,.json},
# internal/gpu/kernels/timing.ptxas.txt. See docs/cuda.md.

NVCC ?= nvcc
# Extra nvcc flags for the host compiler, e.g. "-ccbin g++-11" where the
# default g++ is newer than the toolkit supports.
NVCC_HOST_FLAGS ?=

# Every plugin folder with a kernel.cu has its kernels built here, except
# those that need a newer nvcc for sm_90a: mk/hopper.mk builds them.
SM90A_KERNEL_PLUGINS := cuda-hopper
CUDA_KERNEL_PLUGINS  := $(filter-out $(SM90A_KERNEL_PLUGINS),$(patsubst plugins/%/kernel.cu,%,$(wildcard plugins/*/kernel.cu)))
CUDA_HEADERS        := $(wildcard internal/gpu/kernels/*.cuh)
CUDA_TIMING_FATBIN  := internal/gpu/kernels/timing.fatbin
CUDA_PLUGIN_FATBINS := $(CUDA_KERNEL_PLUGINS:%=plugins/%/kernel.fatbin)
CUDA_FATBINS        := $(CUDA_TIMING_FATBIN) $(CUDA_PLUGIN_FATBINS)
CUDA_SOURCES        := internal/gpu/kernels/timing.cu $(CUDA_KERNEL_PLUGINS:%=plugins/%/kernel.cu)
CUDA_COMPILE        := NVCC="$(NVCC)" NVCC_HOST_FLAGS="$(NVCC_HOST_FLAGS)" scripts/compile-kernels.sh

.PHONY: cuda-kernels cuda-check-compile cuda-ptxas-report cuda-clean

cuda-kernels: $(CUDA_FATBINS)

$(CUDA_TIMING_FATBIN): internal/gpu/kernels/timing.cu scripts/compile-kernels.sh
	$(CUDA_COMPILE) $< $@

plugins/%/kernel.fatbin: plugins/%/kernel.cu $(CUDA_HEADERS) scripts/compile-kernels.sh
	$(CUDA_COMPILE) $< $@

# The CUDA-file examples are compiled at run time by the cuda-file plugin;
# CI checks here that they compile for every target too.
CUDA_EXAMPLE_SOURCES := $(wildcard examples/cuda/*.cu examples/cuda/*/*.cu)

cuda-check-compile:
	$(CUDA_COMPILE) --check $(CUDA_SOURCES) $(CUDA_EXAMPLE_SOURCES)

cuda-ptxas-report: cuda-kernels
	@for f in $(CUDA_FATBINS:.fatbin=.ptxas.txt); do \
		echo "== $$f"; \
		grep -E "Compiling entry|spill|Used" $$f | \
		sed -E 's/ptxas info *: //; s/Compiling entry function/  /' | paste - - - ; done

cuda-clean:
	rm -f $(CUDA_FATBINS) $(CUDA_FATBINS:=.json) $(CUDA_FATBINS:.fatbin=.ptxas.txt)
