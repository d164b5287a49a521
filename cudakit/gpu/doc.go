// Package gpu is the one package that talks to the CUDA driver (through
// gorgonia.org/cu and a small cgo shim of its own). Everything else in
// FlashCore reaches the GPU through it.
//
// Where to start:
//
//  1. QueryDevice describes a GPU without creating a context.
//  2. NewWorker creates a context on a goroutine locked to one OS thread;
//     the driver's current context is per thread, so every other call of
//     this package runs inside Worker.Do.
//  3. LoadModule loads a fatbin; Function.Launch launches a kernel with
//     Args, each in its own 8-byte slot (gorgonia/cu copies every parameter
//     as 8 bytes, so nothing larger, such as a struct, may be passed).
//  4. Alloc, Event and Timer give buffers, CUDA events, and the spin and L2
//     flush kernels of the measurement contract (docs/measurement.md).
//  5. Manifest describes a fatbin as built by scripts/compile-kernels.sh
//     and refuses a fatbin whose sources have changed since.
//
// Files that import gorgonia.org/cu carry the cuda build tag. Without it the
// package still builds: every operation returns ErrNoCUDA, and the pure-Go
// parts (Manifest, Arg, DeviceInfo arithmetic, CUDAError) work as usual.
package gpu
