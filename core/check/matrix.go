package check

import (
	"math"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Matrix is an output seen as Rows rows of Cols elements, with the
// reference of some of its rows: the shape of check that every op whose
// reference is computed row by row shares.
type Matrix struct {
	DType      sdk.DType
	Rows, Cols int
	// Checked are the rows compared, and Want their reference values.
	Checked []int
	Want    [][]float64
	// RowSeed drew Checked when they are a sample (0: every row).
	RowSeed uint64
	// Where names an element in the op's own terms, such as "[row 3 col 7]".
	Where func(row, col int) string
}

// CheckMatrix compares output with m's reference. The reason of a FAIL is
// the first of: wrong output size; unwritten elements; NaN or Inf
// elements; an all-zero output; a relative L2 error above tol.RelL2;
// elements outside atol + rtol·|r|.
func CheckMatrix(output []byte, m Matrix, tol op.Tolerance) Report {
	elements := m.Rows * m.Cols
	r := Report{Verdict: Pass, RowsTotal: m.Rows, RowsChecked: len(m.Checked)}
	r.Sampled = r.RowsChecked < r.RowsTotal
	if r.Sampled {
		r.RowSeed = m.RowSeed
	}
	if want := elements * m.DType.Size(); len(output) != want {
		return r.fail("wrong output size: %d bytes, want %d (%d %s elements)", len(output), want, elements, m.DType)
	}
	census := countSpecial(output, m.DType)
	r.NaN, r.Inf, r.Unwritten = census.nan, census.inf, census.unwritten
	worst := r.compareRows(output, m, tol)
	switch {
	case r.Unwritten > 0:
		return r.fail("%d of %d output elements unwritten (still %#x poison)", r.Unwritten, elements, sdk.PoisonByte)
	case r.NaN+r.Inf > 0:
		return r.fail("output has %d NaN and %d Inf elements", r.NaN, r.Inf)
	case census.zero == elements:
		return r.fail("output is all zeros")
	case !(r.RelL2Err <= tol.RelL2):
		return r.fail("relative L2 error %.3g exceeds rel_l2 %.3g", r.RelL2Err, tol.RelL2)
	case r.Violations > 0:
		return r.fail("%d of %d checked elements exceed atol + rtol·|ref|; worst at %s (element %d): got %.6g, want %.6g (|error| %.3g > %.3g)",
			r.Violations, r.RowsChecked*m.Cols, m.Where(worst.row, worst.col), worst.row*m.Cols+worst.col,
			worst.got, worst.want, math.Abs(worst.got-worst.want), tol.Atol+tol.Rtol*math.Abs(worst.want))
	}
	return r
}

// matrixElement is one compared element of a Matrix.
type matrixElement struct {
	row, col  int
	index     int // of the row in Matrix.Checked
	got, want float64
	excess    float64
	found     bool
}

// compareRows fills the error figures of m's checked rows (MaxAbsErr,
// Violations, RelL2Err) and returns the element that exceeds its bound the
// most; NaN and Inf are left to the census of the whole output.
func (r *Report) compareRows(output []byte, m Matrix, tol op.Tolerance) matrixElement {
	var sums errorSums
	got := make([]float64, m.Cols)
	rowBytes := m.Cols * m.DType.Size()
	for i, row := range m.Checked {
		inputs.DecodeInto(got, m.DType, output[row*rowBytes:(row+1)*rowBytes])
		addRow(&sums, row, i, got, m.Want[i], tol.Atol, tol.Rtol)
	}
	r.MaxAbsErr, r.Violations = sums.maxAbs, sums.violations
	r.RelL2Err = relativeL2(sums.sumSqErr, sums.sumSqRef)
	return sums.worst
}

// errorSums are the error figures of the rows compared so far.
type errorSums struct {
	maxAbs, sumSqErr, sumSqRef float64
	violations                 int
	worst                      matrixElement
}

// addRow compares one decoded output row, got, with its reference, want,
// holding each element to atol + rtol·|want|; index is the row's place in
// the caller's list. NaN and Inf outputs are left to the census of the
// whole output.
func addRow[T float32 | float64](sums *errorSums, row, index int, got []float64, want []T, atol, rtol float64) {
	for col, o := range got {
		if math.IsNaN(o) || math.IsInf(o, 0) {
			continue
		}
		ref := float64(want[col])
		diff := math.Abs(o - ref)
		sums.maxAbs = max(sums.maxAbs, diff)
		sums.sumSqErr += diff * diff
		sums.sumSqRef += ref * ref
		excess := diff - (atol + rtol*math.Abs(ref))
		if excess <= 0 {
			continue
		}
		sums.violations++
		if !sums.worst.found || excess > sums.worst.excess {
			sums.worst = matrixElement{row: row, col: col, index: index, got: o, want: ref, excess: excess, found: true}
		}
	}
}

// SampleRows picks which of n rows a check compares: every row when the
// reference of all of them costs at most settings.FullCheckMaxPairs
// (cost is per row), else settings.SampledRows rows drawn from seed, the
// first and last always among them.
func SampleRows(n int, costPerRow int64, settings op.CheckSettings, seed uint64) []int {
	if int64(n)*costPerRow <= settings.FullCheckMaxPairs || settings.SampledRows >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	picked := map[int]bool{0: true, n - 1: true}
	draws := inputs.NewStream(seed, "sampled rows", 0) // the inputs' generator, keyed apart
	for i := 0; len(picked) < settings.SampledRows; i++ {
		picked[int(draws.Word(i)%uint64(n))] = true
	}
	out := make([]int, 0, len(picked))
	for i := range n {
		if picked[i] {
			out = append(out, i)
		}
	}
	return out
}

// RowsSampled reports whether SampleRows would sample.
func RowsSampled(n int, costPerRow int64, settings op.CheckSettings) bool {
	return int64(n)*costPerRow > settings.FullCheckMaxPairs && settings.SampledRows < n
}
