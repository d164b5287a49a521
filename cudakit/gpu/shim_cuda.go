//go:build cuda

package gpu

// The shim covers what gorgonia.org/cu lacks: cuFuncSetAttribute (needed to
// give a kernel more than 48 KB of dynamic shared memory), cuGetErrorName,
// and the device attributes cu has no constants for.

/*
#cgo LDFLAGS: -lcuda
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64
#include <cuda.h>

static CUresult flashcore_set_max_dynamic_shared(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

static const char* flashcore_error_name(CUresult r) {
	const char* name = 0;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS) return 0;
	return name;
}
*/
import "C"

import (
	"errors"
	"reflect"
	"unsafe"

	"gorgonia.org/cu"
)

// Device attributes cu v0.9.6 has no names for.
const (
	attrMaxSharedPerBlockOptin = cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
)

// cFunction is the driver handle inside a cu.Function. cu keeps it in an
// unexported field of a one-pointer struct; the size check below fails the
// build if that ever changes.
func cFunction(fn cu.Function) C.CUfunction {
	return *(*C.CUfunction)(unsafe.Pointer(&fn))
}

var _ [unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(C.CUfunction(nil))]struct{}
var _ [unsafe.Sizeof(C.CUfunction(nil)) - unsafe.Sizeof(cu.Function{})]struct{}

func setMaxDynamicShared(fn cu.Function, bytes int) error {
	return resultErr(C.flashcore_set_max_dynamic_shared(cFunction(fn), C.int(bytes)))
}

func resultErr(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &CUDAError{Code: int(r), Name: resultName(int(r))}
}

// resultName is the cuda.h name of a CUresult, as the driver knows it.
func resultName(code int) string {
	name := C.flashcore_error_name(C.CUresult(code))
	if name == nil {
		return ""
	}
	return C.GoString(name)
}

// wrap turns an error from cu (an integer CUresult type with a CamelCase
// text) or from the shim into a *CUDAError naming op and the cuda.h name.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var cerr *CUDAError
	if errors.As(err, &cerr) {
		return &CUDAError{Op: op, Code: cerr.Code, Name: cerr.Name}
	}
	if v := reflect.ValueOf(err); v.Kind() == reflect.Int {
		code := int(v.Int())
		return &CUDAError{Op: op, Code: code, Name: resultName(code)}
	}
	return &CUDAError{Op: op, Code: -1, Name: err.Error()}
}
