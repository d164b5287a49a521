package reference

import (
	"math"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// AttendRow is one query row of softmax attention in float64, for the
// attention ops whose keys are not one dense [S, D] block (a paged cache,
// packed sequences): q against keys lo..hi, key j's row of D elements of
// dtype starting at byte at(j) of k and of v; each score q·k·scale passes
// through score (soft-capping, or none) before a softmax that subtracts
// the row maximum. A row that sees no key (hi < lo) is zeros.
func AttendRow(dtype sdk.DType, q []float64, k, v []byte, lo, hi int, at func(j int) int, scale float64, score func(float64) float64) []float64 {
	d, size := len(q), dtype.Size()
	out := make([]float64, d)
	if hi < lo {
		return out
	}
	scores := make([]float64, hi-lo+1)
	row := make([]float64, d)
	peak := math.Inf(-1)
	for j := lo; j <= hi; j++ {
		inputs.DecodeInto(row, dtype, k[at(j):at(j)+d*size])
		scores[j-lo] = score(dot(q, row) * scale)
		peak = max(peak, scores[j-lo])
	}
	var sum float64
	for j := lo; j <= hi; j++ {
		p := math.Exp(scores[j-lo] - peak)
		sum += p
		inputs.DecodeInto(row, dtype, v[at(j):at(j)+d*size])
		axpy(out, p, row)
	}
	for e := range out {
		out[e] /= sum
	}
	return out
}
