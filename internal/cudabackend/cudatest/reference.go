package cudatest

import (
	"math"

	"github.com/flashcore/bench/sdk"
)

// reference computes attention in fp64 on the decoded inputs: for each query
// row, softmax(q·kᵀ·scale) over the keys it sees, times V.
func reference(shape sdk.Shape, q, k, v []float64) []float64 {
	d := shape.HeadDim
	group := shape.Heads / shape.KVHeads
	scale := shape.Scale()
	out := make([]float64, shape.QElements())
	weights := make([]float64, shape.SeqK)
	for b := range shape.Batch {
		for h := range shape.Heads {
			qHead := (b*shape.Heads + h) * shape.SeqQ * d
			kvHead := (b*shape.KVHeads + h/group) * shape.SeqK * d
			for i := range shape.SeqQ {
				visible := shape.SeqK
				if shape.Causal {
					visible = min(i+1, shape.SeqK)
				}
				qRow := q[qHead+i*d : qHead+(i+1)*d]
				softmax(weights[:visible], func(j int) float64 {
					return dot(qRow, k[kvHead+j*d:kvHead+(j+1)*d]) * scale
				})
				oRow := out[qHead+i*d : qHead+(i+1)*d]
				for j, w := range weights[:visible] {
					vRow := v[kvHead+j*d : kvHead+(j+1)*d]
					for c := range oRow {
						oRow[c] += w * vRow[c]
					}
				}
			}
		}
	}
	return out
}

// softmax fills w with the softmax of score(0..len(w)-1).
func softmax(w []float64, score func(j int) float64) {
	m := math.Inf(-1)
	for j := range w {
		w[j] = score(j)
		m = math.Max(m, w[j])
	}
	sum := 0.0
	for j := range w {
		w[j] = math.Exp(w[j] - m)
		sum += w[j]
	}
	for j := range w {
		w[j] /= sum
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Errors compares an output with the reference.
type Errors struct {
	MaxAbs    float64 // largest |got − want|
	RelL2     float64 // ‖got − want‖₂ / ‖want‖₂
	NonFinite int     // NaN or ±Inf elements that are not poison
	Unwritten int     // elements still holding the poison pattern
}

// compare measures got (raw bytes of dtype) against want.
func compare(dtype sdk.DType, got []byte, want []float64) Errors {
	e := Errors{Unwritten: countPoisoned(dtype, got)}
	values := decode(dtype, got)
	var diff2, ref2 float64
	for i, g := range values {
		if math.IsNaN(g) || math.IsInf(g, 0) {
			e.NonFinite++
			continue
		}
		d := math.Abs(g - want[i])
		e.MaxAbs = math.Max(e.MaxAbs, d)
		diff2 += d * d
		ref2 += want[i] * want[i]
	}
	e.NonFinite -= e.Unwritten // the poison pattern is a NaN
	if ref2 > 0 {
		e.RelL2 = math.Sqrt(diff2 / ref2)
	}
	return e
}

// Tolerance bounds the errors of one dtype.
type Tolerance struct{ MaxAbs, RelL2 float64 }

// Tolerances per dtype. fp16 keeps 11 significant bits and bf16 8; both
// round P before P·V on tensor cores and round the output, so bf16 gets 8×
// the fp16 bound.
var Tolerances = map[sdk.DType]Tolerance{
	sdk.FP16: {MaxAbs: 1e-2, RelL2: 2e-3},
	sdk.BF16: {MaxAbs: 8e-2, RelL2: 1.6e-2},
}

// Within reports whether e is inside tol with every element written.
func (e Errors) Within(tol Tolerance) bool {
	return e.Unwritten == 0 && e.NonFinite == 0 && e.MaxAbs <= tol.MaxAbs && e.RelL2 <= tol.RelL2
}
