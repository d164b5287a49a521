//go:build cuda

package gpu

// NVTX ranges, for profilers that select kernels by the range they ran in
// (Nsight Compute's --nvtx-include). NVTX 3 is header-only: with no
// profiler attached (no injection library named in NVTX_INJECTION64_PATH)
// each call returns at once.

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include <nvtx3/nvToolsExt.h>

static void flashcore_range_push(const char* name) { nvtxRangePushA(name); }
static void flashcore_range_pop(void) { nvtxRangePop(); }
*/
import "C"

import "unsafe"

// PushRange opens a nested NVTX range named name on the calling thread.
func PushRange(name string) {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	C.flashcore_range_push(c)
}

// PopRange closes the innermost NVTX range of the calling thread.
func PopRange() { C.flashcore_range_pop() }
