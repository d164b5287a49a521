package gpu

import "fmt"

// CheckTensorMap says what keeps a tiled, 128-byte swizzled tensor map of a
// dense tensor of dims elements (innermost first), read in boxes of box
// elements, from being encoded over a buffer of bufferBytes: the driver's
// limits (rank 1 to 5, boxes of 1 to 256 elements, an innermost box of at
// most 128 bytes for the swizzle, strides that are multiples of 16 bytes)
// and the buffer's size.
func CheckTensorMap(bufferBytes int64, elemBytes int, dims []uint64, box []uint32) error {
	switch {
	case len(dims) < 1 || len(dims) > 5:
		return fmt.Errorf("tensor map: rank %d, want 1 to 5", len(dims))
	case len(box) != len(dims):
		return fmt.Errorf("tensor map: a box of rank %d for dims of rank %d", len(box), len(dims))
	case elemBytes != 2 && elemBytes != 4:
		return fmt.Errorf("tensor map: elements of %d bytes, want 2 or 4", elemBytes)
	case uint64(box[0])*uint64(elemBytes) > 128:
		return fmt.Errorf("tensor map: an innermost box of %d bytes; the 128-byte swizzle takes at most 128", uint64(box[0])*uint64(elemBytes))
	}
	total := uint64(elemBytes)
	for i := range dims {
		if dims[i] == 0 || dims[i] > 1<<32 {
			return fmt.Errorf("tensor map: dim %d is %d, want 1 to 2^32", i, dims[i])
		}
		if box[i] == 0 || box[i] > 256 {
			return fmt.Errorf("tensor map: box %d is %d, want 1 to 256", i, box[i])
		}
		total *= dims[i]
		if i < len(dims)-1 && total%16 != 0 {
			return fmt.Errorf("tensor map: a stride of %d bytes after dim %d, not a multiple of 16", total, i)
		}
	}
	if total > uint64(bufferBytes) {
		return fmt.Errorf("tensor map: %d bytes of tensor over a buffer of %d", total, bufferBytes)
	}
	return nil
}
