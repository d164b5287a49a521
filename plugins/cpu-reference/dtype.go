package cpureference

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flashcore/bench/sdk"
	"github.com/x448/float16"
)

// decode converts the raw little-endian bytes of a tensor in dtype to
// float32, the type every computation of this backend runs in. fp16 and
// bf16 convert exactly: float32 holds every value they can hold.
func decode(dtype sdk.DType, raw []byte) ([]float32, error) {
	size := dtype.Size()
	if size == 0 {
		return nil, fmt.Errorf("unknown dtype %q", dtype)
	}
	if len(raw)%size != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of %s elements", len(raw), dtype)
	}
	values := make([]float32, len(raw)/size)
	for i := range values {
		values[i] = decodeElement(dtype, raw[i*size:])
	}
	return values, nil
}

func decodeElement(dtype sdk.DType, b []byte) float32 {
	switch dtype {
	case sdk.FP16:
		return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32()
	case sdk.BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	default:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	}
}

// encode writes values into out in dtype, rounding to nearest with ties to
// even. len(out) must be len(values)*dtype.Size().
func encode(dtype sdk.DType, values []float32, out []byte) {
	size := dtype.Size()
	for i, v := range values {
		b := out[i*size:]
		switch dtype {
		case sdk.FP16:
			binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits())
		case sdk.BF16:
			binary.LittleEndian.PutUint16(b, bfloat16Bits(v))
		default:
			binary.LittleEndian.PutUint32(b, math.Float32bits(v))
		}
	}
}

// bfloat16Bits rounds a float32 to bfloat16 (its upper 16 bits), to nearest
// with ties to even. NaNs keep their sign and top payload bits and stay
// NaN, so a poisoned value (all bits set) encodes to a poisoned value.
func bfloat16Bits(v float32) uint16 {
	bits := math.Float32bits(v)
	if v != v {
		return uint16(bits>>16) | 0x0040 // keep it a quiet NaN
	}
	roundingBias := uint32(0x7FFF) + (bits>>16)&1
	return uint16((bits + roundingBias) >> 16)
}
