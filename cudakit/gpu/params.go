package gpu

import (
	"math"
	"unsafe"
)

// Arg is one kernel parameter in its own 8-byte slot. gorgonia/cu's Launch
// copies 8 bytes per parameter, and the driver then reads as many bytes as
// the kernel's parameter has, from the start of the slot: a pointer or a
// 64-bit integer uses all 8, an int or a float the low 4 (little-endian).
// Anything larger than 8 bytes cannot be passed, so kernels take pointers
// and scalars only.
type Arg uint64

// Int32 is an int kernel parameter.
func Int32(x int32) Arg { return Arg(uint64(uint32(x))) }

// Uint64 is an unsigned long long kernel parameter.
func Uint64(x uint64) Arg { return Arg(x) }

// Float32 is a float kernel parameter.
func Float32(x float32) Arg { return Arg(uint64(math.Float32bits(x))) }

// Float64 is a double kernel parameter.
func Float64(x float64) Arg { return Arg(math.Float64bits(x)) }

// Int64 is a long long kernel parameter.
func Int64(x int64) Arg { return Arg(uint64(x)) }

// Pointer is a device pointer kernel parameter.
func Pointer(address uintptr) Arg { return Arg(uint64(address)) }

// paramPointers lays args out as the kernelParams array cuLaunchKernel
// wants: one pointer per parameter, each to its own 8-byte slot. The slots
// must stay alive until the launch call returns.
func paramPointers(args []Arg) (slots []uint64, pointers []unsafe.Pointer) {
	slots = make([]uint64, len(args))
	pointers = make([]unsafe.Pointer, len(args))
	for i, a := range args {
		slots[i] = uint64(a)
		pointers[i] = unsafe.Pointer(&slots[i])
	}
	return slots, pointers
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z int }

// Threads is X*Y*Z.
func (d Dim3) Threads() int { return d.X * d.Y * d.Z }
