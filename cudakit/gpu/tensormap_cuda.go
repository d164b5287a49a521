//go:build cuda

package gpu

/*
#include <cuda.h>
#include <string.h>

// flashcore_encode_tiled encodes a tiled tensor map of a dense tensor whose
// dims (innermost first) and box are given, with the 128-byte swizzle, no
// interleave, 256-byte L2 promotion and zeros for reads out of bounds.
static CUresult flashcore_encode_tiled(void* out, CUtensorMapDataType type, cuuint32_t rank, CUdeviceptr addr,
                                       const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box) {
	CUtensorMap map;
	cuuint32_t ones[5] = {1, 1, 1, 1, 1};
	CUresult r = cuTensorMapEncodeTiled(&map, type, rank, (void*)addr, dims, strides, box, ones,
	                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r == CUDA_SUCCESS) memcpy(out, &map, sizeof(map));
	return r;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// TensorMapBytes is the size of a CUtensorMap.
const TensorMapBytes = 128

var _ [TensorMapBytes - unsafe.Sizeof(C.CUtensorMap{})]struct{}
var _ [unsafe.Sizeof(C.CUtensorMap{}) - TensorMapBytes]struct{}

// EncodeTensorMap encodes a tiled TMA tensor map (cuTensorMapEncodeTiled)
// of the dense tensor at b: dims elements (innermost first) of elemBytes
// each (2: fp16 or bf16 by bf16; 4: fp32), read in boxes of box elements,
// 128-byte swizzled, zeros where a box reaches past dims.
func EncodeTensorMap(b *Buffer, elemBytes int, bf16 bool, dims []uint64, box []uint32) ([TensorMapBytes]byte, error) {
	var out [TensorMapBytes]byte
	if err := CheckTensorMap(b.Size(), elemBytes, dims, box); err != nil {
		return out, err
	}
	var typ C.CUtensorMapDataType
	switch {
	case elemBytes == 2 && bf16:
		typ = C.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	case elemBytes == 2:
		typ = C.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	case elemBytes == 4:
		typ = C.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
	default:
		return out, fmt.Errorf("tensor map: elements of %d bytes", elemBytes)
	}
	cdims := make([]C.cuuint64_t, len(dims))
	cbox := make([]C.cuuint32_t, len(box))
	strides := make([]C.cuuint64_t, len(dims)) // bytes from one index of dim i+1 to the next
	stride := uint64(elemBytes)
	for i := range dims {
		cdims[i] = C.cuuint64_t(dims[i])
		cbox[i] = C.cuuint32_t(box[i])
		stride *= dims[i]
		strides[i] = C.cuuint64_t(stride)
	}
	r := C.flashcore_encode_tiled(unsafe.Pointer(&out[0]), typ, C.cuuint32_t(len(dims)), C.CUdeviceptr(b.ptr),
		&cdims[0], &strides[0], &cbox[0])
	return out, wrap("encode a tensor map", resultErr(r))
}
