package gpu

import (
	"errors"
	"fmt"
)

// ErrNoCUDA is returned by every operation of a binary built without the
// cuda build tag.
var ErrNoCUDA = errors.New("gpu: built without CUDA")

// ErrWorkerClosed is returned by Worker.Do after Close.
var ErrWorkerClosed = errors.New("gpu: worker closed")

// CUresult codes this package and its callers tell apart (cuda.h).
const (
	ResultOutOfMemory        = 2
	ResultNoDevice           = 100
	ResultNoBinaryForGPU     = 209
	ResultECCUncorrectable   = 214
	ResultIllegalAddress     = 700
	ResultLaunchOutOfResrcs  = 701
	ResultLaunchTimeout      = 702
	ResultHardwareStackError = 714
	ResultIllegalInstruction = 715
	ResultMisalignedAddress  = 716
	ResultInvalidAddrSpace   = 717
	ResultInvalidPC          = 718
	ResultLaunchFailed       = 719
	ResultAssert             = 710
)

// CUDAError is a driver call that failed. Its text names the operation and
// the CUresult by its cuda.h name, e.g.
// "launch attn_fwd_fp16_d64: CUDA_ERROR_ILLEGAL_ADDRESS".
type CUDAError struct {
	Op   string // what was attempted
	Code int    // the CUresult
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY
}

func (e *CUDAError) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult %d", e.Code)
	}
	return e.Op + ": " + name
}

// ContextLost reports whether the error leaves the CUDA context unusable:
// after a fault in a kernel every later call of the context fails, and only
// a new process recovers.
func (e *CUDAError) ContextLost() bool {
	switch e.Code {
	case ResultIllegalAddress, ResultLaunchTimeout, ResultHardwareStackError, ResultIllegalInstruction,
		ResultMisalignedAddress, ResultInvalidAddrSpace, ResultInvalidPC, ResultLaunchFailed, ResultAssert,
		ResultECCUncorrectable:
		return true
	}
	return false
}

// IsOutOfMemory reports whether err is a CUDA out-of-memory error.
func IsOutOfMemory(err error) bool {
	var cerr *CUDAError
	return errors.As(err, &cerr) && cerr.Code == ResultOutOfMemory
}

// IsContextLost reports whether err is a CUDA error after which the context
// is unusable (see CUDAError.ContextLost).
func IsContextLost(err error) bool {
	var cerr *CUDAError
	return errors.As(err, &cerr) && cerr.ContextLost()
}
