//go:build cuda

package gpu

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// Buffer is device memory of the current context.
type Buffer struct {
	ptr  cu.DevicePtr
	size int64
}

// Alloc allocates size bytes of device memory. An allocation the device
// cannot hold is a CUDAError for which IsOutOfMemory is true.
func Alloc(size int64) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("gpu: allocate %d bytes: size must be positive", size)
	}
	ptr, err := cu.MemAlloc(size)
	if err != nil {
		return nil, wrap(fmt.Sprintf("allocate %d bytes", size), err)
	}
	return &Buffer{ptr: ptr, size: size}, nil
}

// Free releases the buffer; a nil or freed buffer is a no-op.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	err := cu.MemFree(b.ptr)
	b.ptr = 0
	return wrap("free device memory", err)
}

// Size is the buffer's size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Arg is the buffer's address as a kernel parameter.
func (b *Buffer) Arg() Arg { return Pointer(uintptr(b.ptr)) }

// Upload copies src to the start of the buffer and waits for the copy.
func (b *Buffer) Upload(src []byte) error {
	if int64(len(src)) > b.size {
		return fmt.Errorf("gpu: upload %d bytes into a buffer of %d", len(src), b.size)
	}
	if len(src) == 0 {
		return nil
	}
	return wrap("copy to device", cu.MemcpyHtoD(b.ptr, unsafe.Pointer(&src[0]), int64(len(src))))
}

// Download copies the start of the buffer into dst and waits for the copy.
func (b *Buffer) Download(dst []byte) error {
	if int64(len(dst)) > b.size {
		return fmt.Errorf("gpu: download %d bytes from a buffer of %d", len(dst), b.size)
	}
	if len(dst) == 0 {
		return nil
	}
	return wrap("copy from device", cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr, int64(len(dst))))
}

// CopyFrom copies the start of src, as much as the smaller of the two
// holds, into the start of b, on the device.
func (b *Buffer) CopyFrom(src *Buffer) error {
	n := min(b.size, src.size)
	if n == 0 {
		return nil
	}
	return wrap("copy on the device", cu.MemcpyDtoD(b.ptr, src.ptr, n))
}

// Fill sets every byte of the buffer to value.
func (b *Buffer) Fill(value byte) error {
	return wrap("fill device memory", cu.MemsetD8(b.ptr, value, b.size))
}

// FillWords sets every 4-byte word of the buffer to word; the size must be
// a multiple of 4.
func (b *Buffer) FillWords(word uint32) error {
	if b.size%4 != 0 {
		return fmt.Errorf("gpu: fill %d bytes word by word: not a multiple of 4", b.size)
	}
	return wrap("fill device memory", cu.MemsetD32(b.ptr, word, b.size/4))
}

// Synchronize waits for all work queued in the current context and returns
// the first fault a kernel raised, if any.
func Synchronize() error { return wrap("synchronize", cu.Synchronize()) }
