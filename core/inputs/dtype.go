package inputs

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/flashcore/bench/sdk"
	"github.com/x448/float16"
)

// Round returns x as the dtype stores it: x is rounded to float32 and then
// to the dtype, both to nearest with ties to even.
func Round(dtype sdk.DType, x float64) float64 {
	return decodeBits(dtype, encodeBits(dtype, x))
}

// Encode stores values little-endian in the dtype, rounded as by Round.
func Encode(dtype sdk.DType, values []float64) []byte {
	out := make([]byte, len(values)*dtype.Size())
	encodeInto(out, dtype, values)
	return out
}

func encodeInto(out []byte, dtype sdk.DType, values []float64) {
	switch dtype {
	case sdk.FP16:
		for i, v := range values {
			binary.LittleEndian.PutUint16(out[2*i:], fp16FromFloat32(float32(v)))
		}
	case sdk.BF16:
		for i, v := range values {
			binary.LittleEndian.PutUint16(out[2*i:], bf16FromFloat32(float32(v)))
		}
	case sdk.FP32:
		for i, v := range values {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
		}
	default:
		panic(fmt.Sprintf("inputs: unknown dtype %q", dtype))
	}
}

// Decode returns every element of data, little-endian in the dtype.
func Decode(dtype sdk.DType, data []byte) []float64 {
	out := make([]float64, len(data)/dtype.Size())
	DecodeInto(out, dtype, data)
	return out
}

// DecodeInto decodes the first len(dst) elements of data into dst, so a
// caller can read one row of a large tensor without allocating the rest.
func DecodeInto(dst []float64, dtype sdk.DType, data []byte) {
	switch dtype {
	case sdk.FP16:
		table := fp16Table()
		for i := range dst {
			dst[i] = table[binary.LittleEndian.Uint16(data[2*i:])]
		}
	case sdk.BF16:
		for i := range dst {
			dst[i] = bf16ToFloat(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case sdk.FP32:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
	default:
		panic(fmt.Sprintf("inputs: unknown dtype %q", dtype))
	}
}

// At decodes element i of data.
func At(dtype sdk.DType, data []byte, i int) float64 {
	size := dtype.Size()
	switch size {
	case 2:
		return decodeBits(dtype, uint32(binary.LittleEndian.Uint16(data[2*i:])))
	case 4:
		return decodeBits(dtype, binary.LittleEndian.Uint32(data[4*i:]))
	}
	panic(fmt.Sprintf("inputs: unknown dtype %q", dtype))
}

// encodeBits returns the dtype's bit pattern of x (in the low bits).
func encodeBits(dtype sdk.DType, x float64) uint32 {
	f := float32(x)
	switch dtype {
	case sdk.FP16:
		return uint32(fp16FromFloat32(f))
	case sdk.BF16:
		return uint32(bf16FromFloat32(f))
	case sdk.FP32:
		return math.Float32bits(f)
	}
	panic(fmt.Sprintf("inputs: unknown dtype %q", dtype))
}

func decodeBits(dtype sdk.DType, bits uint32) float64 {
	switch dtype {
	case sdk.FP16:
		return fp16Table()[uint16(bits)]
	case sdk.BF16:
		return bf16ToFloat(uint16(bits))
	case sdk.FP32:
		return float64(math.Float32frombits(bits))
	}
	panic(fmt.Sprintf("inputs: unknown dtype %q", dtype))
}

// fp16FromFloat32 rounds to the nearest fp16, ties to even. Values in
// fp16's normal range, nearly all of them, take a short path; zeros,
// subnormals, overflows and NaNs take x448/float16's full conversion.
func fp16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	exp := bits >> 23 & 0xFF
	if exp < 127-14 || exp > 127+15 {
		return float16.Fromfloat32(f).Bits()
	}
	sign := bits >> 16 & 0x8000
	// Round away the 13 low mantissa bits to nearest, ties to even, without
	// a branch (the rounding direction is random, so a branch would be
	// mispredicted half the time). A carry out of the mantissa steps the
	// exponent, and past 65504 it makes +Inf, both as they should.
	magnitude := bits & 0x7FFFFFFF
	magnitude += 0x0FFF + magnitude>>13&1
	half := magnitude>>13 - (127-15)<<10
	return uint16(sign | half)
}

// bf16FromFloat32 rounds to the nearest bfloat16, ties to even, as PyTorch
// does. A NaN stays a (quiet) NaN.
func bf16FromFloat32(f float32) uint16 {
	bits := math.Float32bits(f)
	if f != f {
		return uint16(bits>>16) | 0x0040
	}
	bits += 0x7FFF + (bits>>16)&1
	return uint16(bits >> 16)
}

func bf16ToFloat(bits uint16) float64 {
	return float64(math.Float32frombits(uint32(bits) << 16))
}

// fp16Table maps every fp16 bit pattern to its value: decoding is then one
// load per element.
var fp16Table = sync.OnceValue(func() *[1 << 16]float64 {
	var t [1 << 16]float64
	for i := range t {
		t[i] = float64(float16.Frombits(uint16(i)).Float32())
	}
	return &t
})

// EncodeInt32s is an int32 index tensor's bytes (little-endian), as a
// block table, lengths or offsets are written.
func EncodeInt32s(values []int) []byte {
	out := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(v)))
	}
	return out
}

// DecodeInt32s reads an int32 index tensor.
func DecodeInt32s(data []byte) []int {
	out := make([]int, len(data)/4)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	return out
}
