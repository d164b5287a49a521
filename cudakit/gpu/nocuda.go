//go:build !cuda

package gpu

import "time"

// This file is the twin of the cuda-tagged files: the same API, and every
// operation returns ErrNoCUDA.

// Worker owns a CUDA context in cuda builds; here it cannot be created.
type Worker struct{}

// NewWorker returns ErrNoCUDA.
func NewWorker(ordinal int) (*Worker, error) { return nil, ErrNoCUDA }

// Device returns the zero DeviceInfo.
func (w *Worker) Device() DeviceInfo { return DeviceInfo{} }

// Do returns ErrNoCUDA.
func (w *Worker) Do(fn func() error) error { return ErrNoCUDA }

// Close does nothing.
func (w *Worker) Close() error { return nil }

// DeviceCount returns ErrNoCUDA.
func DeviceCount() (int, error) { return 0, ErrNoCUDA }

// QueryDevice returns ErrNoCUDA.
func QueryDevice(ordinal int) (DeviceInfo, error) { return DeviceInfo{}, ErrNoCUDA }

// Module is a loaded kernel image in cuda builds.
type Module struct{}

// LoadModule returns ErrNoCUDA.
func LoadModule(image []byte) (*Module, error) { return nil, ErrNoCUDA }

// Unload returns ErrNoCUDA.
func (m *Module) Unload() error { return ErrNoCUDA }

// Function returns ErrNoCUDA.
func (m *Module) Function(name string) (*Function, error) { return nil, ErrNoCUDA }

// Function is one kernel in cuda builds.
type Function struct{}

// Name returns "".
func (f *Function) Name() string { return "" }

// Resources returns ErrNoCUDA.
func (f *Function) Resources() (FuncResources, error) { return FuncResources{}, ErrNoCUDA }

// SetMaxDynamicSharedBytes returns ErrNoCUDA.
func (f *Function) SetMaxDynamicSharedBytes(bytes int) error { return ErrNoCUDA }

// BlocksPerSM returns ErrNoCUDA.
func (f *Function) BlocksPerSM(blockThreads, dynamicSharedBytes int) (int, error) {
	return 0, ErrNoCUDA
}

// Launch returns ErrNoCUDA.
func (f *Function) Launch(grid, block Dim3, dynamicSharedBytes int, args ...Arg) error {
	return ErrNoCUDA
}

// Buffer is device memory in cuda builds.
type Buffer struct{}

// Alloc returns ErrNoCUDA.
func Alloc(size int64) (*Buffer, error) { return nil, ErrNoCUDA }

// Free does nothing.
func (b *Buffer) Free() error { return nil }

// Size returns 0.
func (b *Buffer) Size() int64 { return 0 }

// Arg returns a null pointer.
func (b *Buffer) Arg() Arg { return 0 }

// Upload returns ErrNoCUDA.
func (b *Buffer) Upload(src []byte) error { return ErrNoCUDA }

// Download returns ErrNoCUDA.
func (b *Buffer) Download(dst []byte) error { return ErrNoCUDA }

// Fill returns ErrNoCUDA.
func (b *Buffer) Fill(value byte) error { return ErrNoCUDA }

// CopyFrom needs CUDA.
func (b *Buffer) CopyFrom(src *Buffer) error { return ErrNoCUDA }

// FillWords returns ErrNoCUDA.
func (b *Buffer) FillWords(word uint32) error { return ErrNoCUDA }

// Synchronize returns ErrNoCUDA.
func Synchronize() error { return ErrNoCUDA }

// Event is a CUDA event in cuda builds.
type Event struct{}

// NewEvent returns ErrNoCUDA.
func NewEvent() (*Event, error) { return nil, ErrNoCUDA }

// Record returns ErrNoCUDA.
func (e *Event) Record() error { return ErrNoCUDA }

// Synchronize returns ErrNoCUDA.
func (e *Event) Synchronize() error { return ErrNoCUDA }

// Destroy does nothing.
func (e *Event) Destroy() error { return nil }

// Elapsed returns ErrNoCUDA.
func Elapsed(start, stop *Event) (time.Duration, error) { return 0, ErrNoCUDA }

// Timer runs the spin and flush kernels in cuda builds.
type Timer struct{}

// NewTimer returns ErrNoCUDA.
func NewTimer(device DeviceInfo, clockSlots int) (*Timer, error) { return nil, ErrNoCUDA }

// Manifest returns the zero Manifest.
func (t *Timer) Manifest() Manifest { return Manifest{} }

// Spin returns ErrNoCUDA.
func (t *Timer) Spin(d time.Duration) error { return ErrNoCUDA }

// ResetClocks does nothing.
func (t *Timer) ResetClocks() {}

// Clocks returns ErrNoCUDA.
func (t *Timer) Clocks(n int) ([]float64, error) { return nil, ErrNoCUDA }

// FlushBytes returns 0.
func (t *Timer) FlushBytes() int64 { return 0 }

// FlushL2 returns ErrNoCUDA.
func (t *Timer) FlushL2() error { return ErrNoCUDA }

// Close does nothing.
func (t *Timer) Close() error { return nil }

// PushRange does nothing without CUDA.
func PushRange(name string) {}

// PopRange does nothing without CUDA.
func PopRange() {}

// TensorMapBytes is the size of a CUtensorMap.
const TensorMapBytes = 128

// EncodeTensorMap returns ErrNoCUDA.
func EncodeTensorMap(b *Buffer, elemBytes int, bf16 bool, dims []uint64, box []uint32) ([TensorMapBytes]byte, error) {
	return [TensorMapBytes]byte{}, ErrNoCUDA
}
