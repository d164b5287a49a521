package reference

import (
	"math"
	"strconv"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// maskedCase is the attention case of a shape with mask axes set.
func maskedCase(s sdk.Shape, axes ...string) op.Case {
	p := attention.ParamsOf(s)
	for i := 0; i+1 < len(axes); i += 2 {
		p[axes[i]] = axes[i+1]
	}
	return op.Case{ID: attention.CaseIDOf(p, op.Normal), Op: attention.Name, Params: p, Distribution: op.Normal}
}

// naiveMasked is masked attention written from the definitions, over
// whole decoded tensors: query row i sits at key position i (top-left)
// or Sk-Sq+i (bottom-right), sees key j when causal allows (j <= pos) and
// the window does (pos-left <= j <= pos+right), each score capped to
// cap·tanh(s/cap), and a row that sees no key is zeros.
func naiveMasked(t *inputs.Tensors, bottomRight bool, left, right int, softcap float64) [][]float64 {
	s := t.Shape
	q, k, v := inputs.Decode(s.DType, t.Q), inputs.Decode(s.DType, t.K), inputs.Decode(s.DType, t.V)
	d := s.HeadDim
	var out [][]float64
	for b := range s.Batch {
		for h := range s.Heads {
			kvh := h / (s.Heads / s.KVHeads)
			for i := range s.SeqQ {
				pos := i
				if bottomRight {
					pos = s.SeqK - s.SeqQ + i
				}
				qi := q[((b*s.Heads+h)*s.SeqQ+i)*d:][:d]
				weights := make([]float64, s.SeqK)
				peak := math.Inf(-1)
				for j := range s.SeqK {
					if (s.Causal && j > pos) || (left >= 0 && j < pos-left) || (right >= 0 && j > pos+right) {
						weights[j] = math.Inf(-1)
						continue
					}
					kj := k[((b*s.KVHeads+kvh)*s.SeqK+j)*d:][:d]
					var score float64
					for x := range d {
						score += qi[x] * kj[x]
					}
					score /= math.Sqrt(float64(d))
					if softcap > 0 {
						score = softcap * math.Tanh(score/softcap)
					}
					weights[j] = score
					peak = max(peak, score)
				}
				row := make([]float64, d)
				var total float64
				for j := range weights {
					weights[j] = math.Exp(weights[j] - peak)
					total += weights[j]
				}
				for j, w := range weights {
					if w == 0 || math.IsNaN(w) {
						continue
					}
					vj := v[((b*s.KVHeads+kvh)*s.SeqK+j)*d:][:d]
					for x := range d {
						row[x] += w / total * vj[x]
					}
				}
				out = append(out, row)
			}
		}
	}
	return out
}

func TestComputeMaskedMatchesNaive(t *testing.T) {
	shapes := []sdk.Shape{
		shape(1, 2, 2, 16, 16, 8, true, sdk.FP16),
		shape(2, 4, 2, 12, 40, 16, true, sdk.BF16), // GQA, chunked prefill: Sq < Sk
		shape(1, 4, 1, 40, 24, 8, true, sdk.FP32),  // MQA, Sq > Sk: bottom-right rows above the first key see none
		shape(1, 2, 2, 20, 33, 8, false, sdk.FP16),
	}
	masks := []struct {
		bottomRight bool
		left, right int
		softcap     float64
	}{
		{true, -1, -1, 0},
		{false, 5, -1, 0},
		{true, 5, -1, 0},
		{true, 3, 2, 0},
		{false, -1, -1, 2.5},
		{true, 7, -1, 1},
	}
	for _, s := range shapes {
		for _, m := range masks {
			axes := []string{"window_left", strconv.Itoa(m.left), "window_right", strconv.Itoa(m.right),
				"softcap", strconv.FormatFloat(m.softcap, 'g', -1, 64)}
			if m.bottomRight {
				axes = append(axes, "causal_align", "bottom-right")
			}
			c := maskedCase(s, axes...)
			tensors := inputs.Generate(5, c)
			got := Compute(tensors, Rows(s, everyRow, 0))
			want := naiveMasked(tensors, m.bottomRight, m.left, m.right, m.softcap)
			empty := 0
			for i := range got {
				zero := true
				for x := range got[i] {
					w := want[i][x]
					zero = zero && got[i][x] == 0
					if math.Abs(got[i][x]-w) > 1e-12*(1+math.Abs(w)) {
						t.Fatalf("%s row %d elem %d: %v, naive %v", c.ID, i, x, got[i][x], w)
					}
				}
				if zero {
					empty++
				}
			}
			if m.bottomRight && s.Causal && s.SeqQ > s.SeqK && empty == 0 {
				t.Errorf("%s: no row is zeros, want the rows above the first key", c.ID)
			}
		}
	}
}
