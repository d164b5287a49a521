// Package cudatest checks a CUDA backend in-process, against an fp64
// reference computed here, on small shapes chosen to hit every edge a
// kernel can get wrong: sequence lengths that are not tile multiples, causal
// masking with Sq != Sk, grouped-query heads, one query row, both dtypes and
// both head dims. The plugins' cuda-tagged tests call Check and Timing.
//
// Where to start: Check (check.go). The package itself needs no GPU: its
// reference and tensor encoding are tested on the CPU.
package cudatest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"

	"github.com/flashcore/bench/sdk"
)

// encode stores x in dtype, little-endian, rounding to nearest even.
func encode(dtype sdk.DType, x []float32) []byte {
	out := make([]byte, len(x)*dtype.Size())
	for i, v := range x {
		switch dtype {
		case sdk.FP16:
			binary.LittleEndian.PutUint16(out[2*i:], float16.Fromfloat32(v).Bits())
		case sdk.BF16:
			binary.LittleEndian.PutUint16(out[2*i:], bf16Bits(v))
		case sdk.FP32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	}
	return out
}

// decode reads a tensor of dtype into float64s.
func decode(dtype sdk.DType, data []byte) []float64 {
	n := len(data) / dtype.Size()
	out := make([]float64, n)
	for i := range out {
		switch dtype {
		case sdk.FP16:
			out[i] = float64(float16.Frombits(binary.LittleEndian.Uint16(data[2*i:])).Float32())
		case sdk.BF16:
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16))
		case sdk.FP32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
	}
	return out
}

// bf16Bits rounds a float32 to bfloat16, to nearest even (NaN stays NaN).
func bf16Bits(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// countPoisoned counts elements whose bytes are all sdk.PoisonByte: never
// written by the kernel.
func countPoisoned(dtype sdk.DType, data []byte) int {
	size := dtype.Size()
	n := 0
	for i := 0; i+size <= len(data); i += size {
		all := true
		for _, b := range data[i : i+size] {
			all = all && b == sdk.PoisonByte
		}
		if all {
			n++
		}
	}
	return n
}

// randomNormal returns n standard normal values from a seeded generator.
func randomNormal(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out
}
