# mk/cuda.mk: the CUDA toolchain and the CUDA kernels of the cuda-* plugins
# (included by Makefile).
#
#   make cuda-toolchain      fetch the pinned toolchain (mk/cuda-toolchain.txt) once
#   make cuda-kernels        fatbins + manifests, embedded by `go build -tags cuda`
#   make cuda-check-compile  every .cu (examples/cuda too) compiles for sm_80, sm_89 and sm_90 (CI)
#   make cuda-vet            go vet with the cuda tag, against the toolchain's headers (CI)
#   make cuda-ptxas-report   registers, spills and shared memory per kernel
#   make cuda-clean          remove the build outputs below
#
# Build outputs (git-ignored): plugins/cuda-*/kernel.fatbin{,.json},
# plugins/cuda-*/kernel.ptxas.txt, cudakit/gpu/kernels/timing.fatbin{,.json},
# cudakit/gpu/kernels/timing.ptxas.txt. See docs/cuda.md.
#
# Every CUDA part of the build comes from one toolchain of PyPI wheels,
# pinned by hash in mk/cuda-toolchain.txt and unpacked by
# scripts/cuda_toolchain.py into CUDA_TOOLCHAIN, outside the checkout (the
# kernel manifests hash every header under the checkout that a kernel
# includes, so the compiler's own headers must live elsewhere): nvcc 13.5 for
# every kernel, CUDA 12.8's cuda.h and NVTX for cgo, and lib/libcuda.a, which
# opens the machine's driver at run time, so nothing links against a
# libcuda.so. Whatever CUDA the machine has, or none, is not used. The
# folder's name carries the manifest's hash: a changed pin fetches anew.

CUDA_TOOLCHAIN_MANIFEST := mk/cuda-toolchain.txt
CUDA_TOOLCHAIN_ID       := $(shell sha256sum $(CUDA_TOOLCHAIN_MANIFEST) 2>/dev/null | cut -c1-12)
CUDA_TOOLCHAIN          ?= $(HOME)/.cache/flashcore/cuda-toolchain-$(CUDA_TOOLCHAIN_ID)
CUDA_TOOLCHAIN_STAMP    := $(CUDA_TOOLCHAIN)/.installed
# The pinned wheels are x86-64 Linux ones; elsewhere the CUDA plugins are
# built without CUDA (and say so) unless CUDA_TOOLCHAIN names a folder laid
# out the same way.
CUDA_TOOLCHAIN_HOST     := $(if $(and $(filter Linux,$(shell uname -s)),$(filter x86_64,$(shell uname -m))),yes,)
HAVE_CUDA               := $(if $(or $(CUDA_TOOLCHAIN_HOST),$(wildcard $(CUDA_TOOLCHAIN_STAMP))),yes,)
CUDA_TAGS               := $(if $(HAVE_CUDA),cuda,)

NVCC := $(CUDA_TOOLCHAIN)/nvidia/cu13/bin/nvcc
# cgo's flags for the cuda tag: the toolchain's CUDA 12 headers come before
# any a machine has (CGO_CFLAGS precede the #cgo lines), and -lcuda finds the
# toolchain's lib/libcuda.a first.
CUDA_CGO_ENV := CGO_CFLAGS="-g -O2 -I$(CUDA_TOOLCHAIN)/nvidia/cuda_runtime/include -I$(CUDA_TOOLCHAIN)/nvidia/nvtx/include" \
                CGO_LDFLAGS="-g -O2 -L$(CUDA_TOOLCHAIN)/lib"
# Extra nvcc flags for the host compiler, e.g. "-ccbin g++-13" where the
# default g++ is newer than the toolkit supports.
NVCC_HOST_FLAGS ?=

# Every plugin folder with a kernel.cu has its kernels built here, except
# those that need the sm_90a target: mk/hopper.mk builds them.
SM90A_KERNEL_PLUGINS := cuda-hopper
CUDA_KERNEL_PLUGINS  := $(filter-out $(SM90A_KERNEL_PLUGINS),$(patsubst plugins/%/kernel.cu,%,$(wildcard plugins/*/kernel.cu)))
CUDA_HEADERS        := $(wildcard cudakit/gpu/kernels/*.cuh)
CUDA_TIMING_FATBIN  := cudakit/gpu/kernels/timing.fatbin
CUDA_PLUGIN_FATBINS := $(CUDA_KERNEL_PLUGINS:%=plugins/%/kernel.fatbin)
CUDA_FATBINS        := $(CUDA_TIMING_FATBIN) $(CUDA_PLUGIN_FATBINS)
CUDA_SOURCES        := cudakit/gpu/kernels/timing.cu $(CUDA_KERNEL_PLUGINS:%=plugins/%/kernel.cu)
CUDA_COMPILE        := NVCC="$(NVCC)" NVCC_HOST_FLAGS="$(NVCC_HOST_FLAGS)" scripts/compile-kernels.sh

.PHONY: cuda-toolchain cuda-toolchain-dir cuda-kernels cuda-check-compile cuda-vet cuda-ptxas-report cuda-clean

cuda-toolchain: $(CUDA_TOOLCHAIN_STAMP)

cuda-toolchain-dir:
	@echo $(CUDA_TOOLCHAIN)

$(CUDA_TOOLCHAIN_STAMP): $(CUDA_TOOLCHAIN_MANIFEST) scripts/cuda_toolchain.py
	@echo "cuda-toolchain: fetching the pinned CUDA toolchain into $(CUDA_TOOLCHAIN) (about 130 MB, once)"
	$(PYTHON) scripts/cuda_toolchain.py fetch $(CUDA_TOOLCHAIN) $(CUDA_TOOLCHAIN_MANIFEST) $(if $(CUDA_WHEELHOUSE),--wheelhouse $(CUDA_WHEELHOUSE))

cuda-kernels: $(CUDA_FATBINS)

$(CUDA_TIMING_FATBIN): cudakit/gpu/kernels/timing.cu scripts/compile-kernels.sh $(CUDA_TOOLCHAIN_STAMP)
	$(CUDA_COMPILE) $< $@

plugins/%/kernel.fatbin: plugins/%/kernel.cu $(CUDA_HEADERS) scripts/compile-kernels.sh $(CUDA_TOOLCHAIN_STAMP)
	$(CUDA_COMPILE) $< $@

# The CUDA-file examples are compiled at run time by the cuda-file plugin;
# CI checks here that they compile for every target too.
CUDA_EXAMPLE_SOURCES := $(wildcard examples/cuda/*.cu examples/cuda/*/*.cu)

cuda-check-compile: $(CUDA_TOOLCHAIN_STAMP)
	$(CUDA_COMPILE) --check $(CUDA_SOURCES) $(CUDA_EXAMPLE_SOURCES)

cuda-vet: cuda-kernels
	$(CUDA_CGO_ENV) $(GO) vet -tags cuda ./...

cuda-ptxas-report: cuda-kernels
	@for f in $(CUDA_FATBINS:.fatbin=.ptxas.txt); do \
		echo "== $$f"; \
		grep -E "Compiling entry|spill|Used" $$f | \
		sed -E 's/ptxas info *: //; s/Compiling entry function/  /' | paste - - - ; done

cuda-clean:
	rm -f $(CUDA_FATBINS) $(CUDA_FATBINS:=.json) $(CUDA_FATBINS:.fatbin=.ptxas.txt)
