package inputs

import (
	"math"

	"github.com/flashcore/bench/op"
)

// Tensor names one of the input tensors; its number takes part in the
// stream key.
type Tensor int

const (
	TensorQ Tensor = 0
	TensorK Tensor = 1
	TensorV Tensor = 2
	// TensorDO is attention's dO, in the backward modes.
	TensorDO Tensor = 3
)

// Constants of the generator (docs/inputs.md).
const (
	// golden is SplitMix64's increment, ⌊2^64/φ⌋.
	golden = 0x9E3779B97F4A7C15
	// fnvOffset and fnvPrime are the 64-bit FNV-1a parameters.
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
	// OutlierMask selects outliers: an element is one when the low 8 bits of
	// its word are zero, 1 element in 256.
	OutlierMask = 0xFF
	// OutlierScale multiplies an outlier. Normal values stay below about 6,
	// so outliers stay below about 200: far inside fp16's 65504, yet a
	// product of two outliers adds about 128 to a score, which overflows
	// exp() in fp32 unless the kernel subtracts the row maximum.
	OutlierScale = 32
)

// Stream is the counter-based generator of one tensor of one case.
type Stream struct {
	key uint64
}

// NewStream returns the stream of tensor t of the case with the given ID.
func NewStream(seed uint64, caseID string, t Tensor) Stream {
	return Stream{key: mix(mix(mix(seed)^fnv1a(caseID)) + uint64(t))}
}

// Key is the stream's 64-bit key, key_t in docs/inputs.md.
func (s Stream) Key() uint64 { return s.key }

// Word is the n-th 64-bit word of the stream: the n-th output of a
// SplitMix64 generator whose state starts at the key.
func (s Stream) Word(n int) uint64 {
	return mix(s.key + (uint64(n)+1)*golden)
}

// Uniform is the n-th uniform number in [0, 1): the top 53 bits of Word(n).
func (s Stream) Uniform(n int) float64 {
	return unit(s.Word(n))
}

// Value is element n of the tensor in float64, before rounding to a dtype.
func (s Stream) Value(dist op.Distribution, n int) float64 {
	if dist == op.Uniform {
		return 2*s.Uniform(n) - 1
	}
	pair := n &^ 1
	x, y := s.normalPair(pair)
	if n&1 == 1 {
		x = y
	}
	if dist == op.Outliers && isOutlier(s.Word(n)) {
		x *= OutlierScale
	}
	return x
}

// normalPair is the Box–Muller transform of the uniforms at counters pair
// and pair+1 (pair even): two independent standard normal values, for
// elements pair and pair+1.
func (s Stream) normalPair(pair int) (float64, float64) {
	u1, u2 := s.Uniform(pair), s.Uniform(pair+1)
	r := math.Sqrt(-2 * math.Log(1-u1)) // 1-u1 is in (0, 1]: no log(0)
	sin, cos := math.Sincos(2 * math.Pi * u2)
	return r * cos, r * sin
}

func isOutlier(word uint64) bool { return word&OutlierMask == 0 }

func unit(word uint64) float64 { return float64(word>>11) * 0x1p-53 }

// mix is SplitMix64's output function (Steele, Lea and Flood, 2014), a
// bijection of 64-bit words.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fnv1a is the 64-bit FNV-1a hash of the string's bytes.
func fnv1a(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}
