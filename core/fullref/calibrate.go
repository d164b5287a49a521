package fullref

import (
	"math"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
)

// Calibrate is o's largest error against the fp64 reference of t over
// rows drawn from a fresh seed: the edges (every head's first and last
// rows, the last query blocks) and about n more at random. A reference
// that is NaN anywhere there is +Inf: never trusted.
func Calibrate(t *inputs.Tensors, o []float32, n int) float64 {
	s := t.Shape
	rows := reference.Rows(s, op.CheckSettings{SampledRows: n}, check.FreshSeed())
	var worst float64
	for i, want := range reference.ComputeKept(t, rows) {
		at := rows[i].Flat(s) * s.HeadDim
		for col, w := range want {
			diff := math.Abs(float64(o[at+col]) - w)
			if math.IsNaN(diff) {
				return math.Inf(1)
			}
			worst = max(worst, diff)
		}
	}
	return worst
}
