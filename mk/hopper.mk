# mk/hopper.mk: the sm_90a kernel of plugins/cuda-hopper (included by Makefile).
#
#   make hopper-kernel         kernel.fatbin (+ .json manifest, .ptxas.txt)
#   make hopper-check-compile  kernel.cu compiles for sm_90a, warnings as errors
#   make hopper-ptxas-gate     no spills, no stack, setmaxnreg honoured
#
# wgmma and setmaxnreg need the arch-specific sm_90a target. The toolchain's
# nvcc (mk/cuda.mk) builds it, like every other kernel. The fatbin is built,
# not committed: its manifest ties it to the sources.

HOPPER_FATBIN  := plugins/cuda-hopper/kernel.fatbin
HOPPER_COMPILE := NVCC="$(NVCC)" NVCC_HOST_FLAGS="$(NVCC_HOST_FLAGS)" KERNEL_ARCHS=sm_90a scripts/compile-kernels.sh

.PHONY: hopper-kernel hopper-check-compile hopper-ptxas-gate hopper-clean

hopper-kernel: $(HOPPER_FATBIN)

$(HOPPER_FATBIN): plugins/cuda-hopper/kernel.cu $(CUDA_HEADERS) scripts/compile-kernels.sh $(CUDA_TOOLCHAIN_STAMP)
	$(HOPPER_COMPILE) $< $@

hopper-check-compile: $(CUDA_TOOLCHAIN_STAMP)
	$(HOPPER_COMPILE) --check plugins/cuda-hopper/kernel.cu

hopper-ptxas-gate: $(HOPPER_FATBIN)
	$(GO) test -count=1 -run 'TestPtxasGate' ./plugins/cuda-hopper

hopper-clean:
	rm -f $(HOPPER_FATBIN) $(HOPPER_FATBIN).json plugins/cuda-hopper/kernel.ptxas.txt

# The CUDA targets of mk/cuda.mk take the Hopper kernel along.
cuda-kernels: $(HOPPER_FATBIN)
cuda-check-compile: hopper-check-compile
cuda-clean: hopper-clean
