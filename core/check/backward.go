package check

import (
	"fmt"
	"math"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Gradients are the outputs of an attention backward: dQ [B, H, Sq, D],
// dK and dV [B, Hkv, Sk, D], raw bytes in the case's dtype.
type Gradients struct {
	DQ, DK, DV []byte
}

// GradientTolerances are the tolerances of dQ, dK and dV.
type GradientTolerances struct {
	DQ, DK, DV op.Tolerance
}

// CheckGradients compares a backward's outputs with the fp64 reference
// backward of g: dQ on query rows and dK and dV on key rows, every row of
// a small case and a sample of a large one, drawn here from a fresh seed
// after the outputs exist. dV is also held, over the whole output, to the
// invariant that its columns sum to those of dO over the query rows of its
// group (each query row's softmax weights sum to one), so a backend that
// computes some key rows and not others fails even where no row is
// sampled. The reports are dQ's, dK's and dV's.
func CheckGradients(g *reference.Gradients, out Gradients, settings op.CheckSettings, tols GradientTolerances) [3]Report {
	var seed uint64
	if reference.Sampled(g.T.Shape, settings) || reference.KVSampled(g.T.Shape, settings) {
		seed = FreshSeed()
	}
	return CheckGradientsWithSeed(g, out, settings, tols, seed)
}

// CheckGradientsWithSeed is CheckGradients with the row seed given.
func CheckGradientsWithSeed(g *reference.Gradients, out Gradients, settings op.CheckSettings, tols GradientTolerances, seed uint64) [3]Report {
	s := g.T.Shape
	qRows := reference.Rows(s, settings, seed)
	kvRows := reference.KVRows(s, settings, seed)
	qFlat := make([]int, len(qRows))
	for i, r := range qRows {
		qFlat[i] = r.Flat(s)
	}
	kvFlat := make([]int, len(kvRows))
	for i, r := range kvRows {
		kvFlat[i] = r.Flat(s)
	}
	queryWhere := func(row, col int) string {
		return fmt.Sprintf("[b%d h%d q%d d%d]", row/(s.Heads*s.SeqQ), row/s.SeqQ%s.Heads, row%s.SeqQ, col)
	}
	keyWhere := func(row, col int) string {
		return fmt.Sprintf("[b%d kvh%d k%d d%d]", row/(s.KVHeads*s.SeqK), row/s.SeqK%s.KVHeads, row%s.SeqK, col)
	}
	var reports [3]Report
	reports[0] = CheckMatrix(out.DQ, Matrix{DType: s.DType, Rows: s.Batch * s.Heads * s.SeqQ, Cols: s.HeadDim,
		Checked: qFlat, Want: sized(out.DQ, s.QElements(), s.DType, func() [][]float64 { return g.DQ(qRows) }), RowSeed: seed, Where: queryWhere}, tols.DQ)
	var dk, dv [][]float64
	if len(out.DK) == s.KVElements()*s.DType.Size() || len(out.DV) == s.KVElements()*s.DType.Size() {
		dk, dv = g.DKV(kvRows)
	}
	keys := s.Batch * s.KVHeads * s.SeqK
	reports[1] = CheckMatrix(out.DK, Matrix{DType: s.DType, Rows: keys, Cols: s.HeadDim, Checked: kvFlat, Want: dk, RowSeed: seed, Where: keyWhere}, tols.DK)
	reports[2] = CheckMatrix(out.DV, Matrix{DType: s.DType, Rows: keys, Cols: s.HeadDim, Checked: kvFlat, Want: dv, RowSeed: seed, Where: keyWhere}, tols.DV)
	if reports[2].Verdict == Pass {
		if off := dvColumnSums(g, out.DV, tols.DV); off.count > 0 {
			reports[2] = reports[2].fail("%d of %d column sums of dV differ from those of dO over the group's query rows; first %s",
				off.count, s.Batch*s.KVHeads*s.HeadDim, off.first)
		}
	}
	return reports
}

// sized is want() when output has the size of n elements, else nil: the
// reference is not computed for an output that fails on its size.
func sized(output []byte, n int, dtype sdk.DType, want func() [][]float64) [][]float64 {
	if len(output) != n*dtype.Size() {
		return nil
	}
	return want()
}

// columnSums is what the dV invariant found.
type columnSums struct {
	count int
	first string
}

// dvColumnSums checks, for every key/value head and column x, that
// Σ_j dV[j, x] = Σ_h Σ_i dO[h, i, x] (the query rows of the group): each
// row's weights P_ij sum to one over its keys. An honest output's error in
// the sum is that of its elements summed, within atol·sqrt(Sk) +
// rel_l2·Σ_j |dV[j, x]|. Non-finite elements are the census's.
func dvColumnSums(g *reference.Gradients, dv []byte, tol op.Tolerance) columnSums {
	s := g.T.Shape
	d, size := s.HeadDim, s.DType.Size()
	group := s.Heads / s.KVHeads
	row := make([]float64, d)
	sum, abs, want := make([]float64, d), make([]float64, d), make([]float64, d)
	var found columnSums
	for b := range s.Batch {
		for kvh := range s.KVHeads {
			clear(sum)
			clear(abs)
			clear(want)
			base := (b*s.KVHeads + kvh) * s.SeqK * d
			for j := range s.SeqK {
				inputs.DecodeInto(row, s.DType, dv[(base+j*d)*size:])
				for x, v := range row {
					if !math.IsNaN(v) && !math.IsInf(v, 0) {
						sum[x] += v
						abs[x] += math.Abs(v)
					}
				}
			}
			first := (b*s.Heads + kvh*group) * s.SeqQ * d
			for i := range group * s.SeqQ {
				inputs.DecodeInto(row, s.DType, g.T.DO[(first+i*d)*size:])
				for x, v := range row {
					want[x] += v
				}
			}
			for x := range d {
				slack := tol.Atol*math.Sqrt(float64(s.SeqK)) + tol.RelL2*abs[x]
				if math.Abs(sum[x]-want[x]) <= slack {
					continue
				}
				if found.count == 0 {
					found.first = fmt.Sprintf("[b%d kvh%d d%d]: Σ dV %.6g, Σ dO %.6g (|difference| %.3g > %.3g)",
						b, kvh, x, sum[x], want[x], math.Abs(sum[x]-want[x]), slack)
				}
				found.count++
			}
		}
	}
	return found
}
