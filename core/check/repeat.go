package check

import (
	"math"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// RunDiff is how far one output of a repeated run lies from another of
// the same inputs: the figures of the determinism gate.
type RunDiff struct {
	// Elements counts the elements whose bits differ.
	Elements int
	// MaxAbs is the largest |a - b| and MaxULPs the largest distance in
	// units in the last place of the dtype, over the elements finite in
	// both outputs.
	MaxAbs  float64
	MaxULPs int64
	// RelL2 is ||a - b||₂ / ||a||₂ over the same elements; 0 when a is all
	// zeros there.
	RelL2 float64
}

// Diff compares two outputs of one shape and dtype element by element.
// An element that is NaN or Inf in either output counts as differing but
// is left out of the figures, so they stay finite; NonFinite tells such
// outputs apart. Outputs of different lengths differ in every element of
// the longer.
func Diff(a, b []byte, dtype sdk.DType) RunDiff {
	l := layoutOf(dtype)
	if len(a) != len(b) {
		return RunDiff{Elements: max(len(a), len(b)) / l.size}
	}
	var d RunDiff
	var sumSqDiff, sumSqA float64
	for i := 0; i+l.size <= len(a); i += l.size {
		ba, bb := l.bits(a[i:]), l.bits(b[i:])
		if ba == bb {
			x := inputs.At(dtype, a, i/l.size)
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				sumSqA += x * x
			}
			continue
		}
		d.Elements++
		x, y := inputs.At(dtype, a, i/l.size), inputs.At(dtype, b, i/l.size)
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		diff := math.Abs(x - y)
		d.MaxAbs = max(d.MaxAbs, diff)
		d.MaxULPs = max(d.MaxULPs, l.ulps(ba, bb))
		sumSqDiff += diff * diff
		sumSqA += x * x
	}
	if sumSqA > 0 {
		d.RelL2 = math.Sqrt(sumSqDiff / sumSqA)
	}
	return d
}

// NonFinite reports whether output holds a NaN or an Inf (poison bytes,
// which are NaN patterns, count as unwritten, not as NaN).
func NonFinite(output []byte, dtype sdk.DType) bool {
	c := countSpecial(output, dtype)
	return c.nan+c.inf > 0
}

// ulps is the distance between two finite values in steps of the dtype:
// sign-magnitude bits mapped onto one ordered line, so that -0 and +0 are
// one value and the smallest subnormals of either sign are two steps apart.
func (l bitLayout) ulps(a, b uint32) int64 {
	d := l.ordered(a) - l.ordered(b)
	if d < 0 {
		return -d
	}
	return d
}

func (l bitLayout) ordered(bits uint32) int64 {
	sign := l.signBit()
	if bits&sign != 0 {
		return -int64(bits &^ sign)
	}
	return int64(bits)
}
