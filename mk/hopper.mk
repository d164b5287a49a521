# mk/hopper.mk: the sm_90a kernel of plugins/cuda-hopper (included by Makefile).
#
#   make hopper-kernel         kernel.fatbin (+ .json manifest, .ptxas.txt)
#   make hopper-check-compile  kernel.cu compiles for sm_90a, warnings as errors
#   make hopper-ptxas-gate     no spills, no stack, setmaxnreg honoured
#
# wgmma and setmaxnreg need the sm_90a target, which Debian's nvcc 11.8
# cannot build. This uses HOPPER_NVCC, by default the nvcc of PyPI's CUDA
# 13.5 wheels (mk/hopper-nvcc.txt), fetched once into HOPPER_TOOLCHAIN,
# outside the checkout (the manifest hashes every header under the checkout
# that a kernel includes, so the compiler's own headers must live elsewhere). Set HOPPER_NVCC to any nvcc >= 12.0 to use that instead.
# Only the kernel needs it: cgo stays on the system's CUDA headers.
# The fatbin is built, not committed: its manifest ties it to the sources.

HOPPER_CUDA_VERSION := 13.5.37
HOPPER_TOOLCHAIN    ?= $(HOME)/.cache/flashcore/cuda-$(HOPPER_CUDA_VERSION)
HOPPER_NVCC_DEFAULT := $(HOPPER_TOOLCHAIN)/nvidia/cu13/bin/nvcc
HOPPER_NVCC         ?= $(HOPPER_NVCC_DEFAULT)
HOPPER_FETCH        := $(if $(filter $(HOPPER_NVCC_DEFAULT),$(HOPPER_NVCC)),$(HOPPER_TOOLCHAIN)/.installed)
HOPPER_FATBIN       := plugins/cuda-hopper/kernel.fatbin
HOPPER_COMPILE      := NVCC="$(HOPPER_NVCC)" NVCC_HOST_FLAGS="$(NVCC_HOST_FLAGS)" KERNEL_ARCHS=sm_90a scripts/compile-kernels.sh

.PHONY: hopper-kernel hopper-check-compile hopper-ptxas-gate hopper-clean

hopper-kernel: $(HOPPER_FATBIN)

$(HOPPER_TOOLCHAIN)/.installed: mk/hopper-nvcc.txt scripts/fetch-hopper-nvcc.sh
	scripts/fetch-hopper-nvcc.sh $(HOPPER_TOOLCHAIN) mk/hopper-nvcc.txt

$(HOPPER_FATBIN): plugins/cuda-hopper/kernel.cu $(CUDA_HEADERS) scripts/compile-kernels.sh $(HOPPER_FETCH)
	$(HOPPER_COMPILE) $< $@

hopper-check-compile: $(HOPPER_FETCH)
	$(HOPPER_COMPILE) --check plugins/cuda-hopper/kernel.cu

hopper-ptxas-gate: $(HOPPER_FATBIN)
	$(GO) test -count=1 -run 'TestPtxasGate' ./plugins/cuda-hopper

hopper-clean:
	rm -f $(HOPPER_FATBIN) $(HOPPER_FATBIN).json plugins/cuda-hopper/kernel.ptxas.txt

# The CUDA targets of mk/cuda.mk take the Hopper kernel along.
cuda-kernels: $(HOPPER_FATBIN)
cuda-check-compile: hopper-check-compile
cuda-clean: hopper-clean
