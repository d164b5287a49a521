package check

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Verdict is the outcome of a check.
type Verdict string

const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
)

// Report is what a check found.
type Report struct {
	Verdict Verdict
	// Reason says why the verdict is FAIL; empty on PASS.
	Reason string
	// MaxAbsErr and RelL2Err are over the finite elements of the checked
	// rows: max |o-r| and ||o-r||₂ / ||r||₂.
	MaxAbsErr, RelL2Err float64
	// NaN, Inf and Unwritten count elements of the whole output. An
	// unwritten element (every byte still sdk.PoisonByte) is not counted
	// as a NaN although its bits are one.
	NaN, Inf, Unwritten int
	// Violations counts elements of the checked rows with
	// |o-r| > atol + rtol·|r|.
	Violations int
	// RowsChecked of RowsTotal query rows were compared.
	RowsChecked, RowsTotal int
	// Sampled is true when not every row was compared.
	Sampled bool
	// RowSeed drew the sampled rows (reference.Rows); CheckWithSeed with the
	// same seed compares the same rows again. 0 when every row was checked.
	RowSeed uint64
	// OutOfRange counts output elements outside the range of V over the
	// keys their row sees (the whole-output bound, see boundViolations).
	OutOfRange int
	// EveryRow is the check of every row against a full reference, where
	// one was held (CheckEveryRow); nil otherwise.
	EveryRow *EveryRow
}

// Check compares output, the raw bytes a backend wrote for the case of t,
// with the reference. When the case is too large to compare every row, the
// rows are drawn from a fresh random seed, here, after the output exists,
// so a backend cannot know them in advance; the seed is in the Report.
//
// The reason of a FAIL is the first of: wrong output size; unwritten
// elements; NaN or Inf elements; an all-zero output; elements outside the
// range of V over their visible keys (checked over the whole output); a
// relative L2 error above tol.RelL2; elements outside atol + rtol·|r|.
func Check(t *inputs.Tensors, output []byte, settings op.CheckSettings, tol op.Tolerance) Report {
	var seed uint64
	if reference.Sampled(t.Shape, settings) {
		seed = FreshSeed()
	}
	return CheckWithSeed(t, output, settings, tol, seed)
}

// CheckWithSeed is Check with the row seed given: it re-checks a saved
// output on the rows a recorded seed drew.
func CheckWithSeed(t *inputs.Tensors, output []byte, settings op.CheckSettings, tol op.Tolerance, seed uint64) Report {
	s := t.Shape
	r := Report{Verdict: Pass, RowsTotal: s.Batch * s.Heads * s.SeqQ}
	if want := s.QElements() * s.DType.Size(); len(output) != want {
		return r.fail("wrong output size: %d bytes, want %d (%d %s elements)", len(output), want, s.QElements(), s.DType)
	}
	census := countSpecial(output, s.DType)
	r.NaN, r.Inf, r.Unwritten = census.nan, census.inf, census.unwritten
	rows := reference.Rows(s, settings, seed)
	r.RowsChecked, r.Sampled = len(rows), len(rows) < r.RowsTotal
	if r.Sampled {
		r.RowSeed = seed
	}
	worst := r.compare(s, output, rows, reference.ComputeKept(t, rows), tol)
	outside := boundViolations(t, output, tol)
	r.OutOfRange = outside.count
	switch {
	case r.Unwritten > 0:
		return r.fail("%d of %d output elements unwritten (still %#x poison)", r.Unwritten, s.QElements(), sdk.PoisonByte)
	case r.NaN+r.Inf > 0:
		return r.fail("output has %d NaN and %d Inf elements", r.NaN, r.Inf)
	case census.zero == s.QElements():
		return r.fail("output is all zeros")
	case r.OutOfRange > 0:
		return r.fail("%d of %d output elements lie outside the range of V over the keys their row sees; first %s",
			r.OutOfRange, s.QElements(), outside.first.describe(s))
	case !(r.RelL2Err <= tol.RelL2):
		return r.fail("relative L2 error %.3g exceeds rel_l2 %.3g", r.RelL2Err, tol.RelL2)
	case r.Violations > 0:
		return r.fail("%d of %d checked elements exceed atol + rtol·|ref|; worst %s",
			r.Violations, r.RowsChecked*s.HeadDim, worst.describe(s, tol))
	}
	return r
}

// FreshSeed is a random seed from the operating system's generator, which
// nothing a backend can see predicts: the rows a check samples, the inputs
// of the host's batch (runner).
func FreshSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic("check: no system randomness: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

func (r Report) fail(format string, args ...any) Report {
	r.Verdict = Fail
	r.Reason = fmt.Sprintf(format, args...)
	return r
}

// element is one compared element.
type element struct {
	row         reference.RowIndex
	col         int
	got, want   float64
	excess      float64 // |got-want| - (atol + rtol·|want|)
	initialized bool
}

func (e element) describe(s sdk.Shape, tol op.Tolerance) string {
	flat := e.row.Flat(s)*s.HeadDim + e.col
	return fmt.Sprintf("at [b%d h%d q%d d%d] (element %d): got %.6g, want %.6g (|error| %.3g > %.3g)",
		e.row.Batch, e.row.Head, e.row.Row, e.col, flat, e.got, e.want,
		math.Abs(e.got-e.want), tol.Atol+tol.Rtol*math.Abs(e.want))
}

// compare fills the error figures of the checked rows and returns the
// element that exceeds its bound the most: the row-matrix comparison
// (compareRows), with the output seen as B·H·Sq rows of D.
func (r *Report) compare(s sdk.Shape, output []byte, rows []reference.RowIndex, want [][]float64, tol op.Tolerance) element {
	flat := make([]int, len(rows))
	for i, row := range rows {
		flat[i] = row.Flat(s)
	}
	worst := r.compareRows(output, Matrix{DType: s.DType, Cols: s.HeadDim, Checked: flat, Want: want}, tol)
	if !worst.found {
		return element{}
	}
	return element{row: rows[worst.index], col: worst.col, got: worst.got, want: worst.want, excess: worst.excess, initialized: true}
}

func relativeL2(sumSqErr, sumSqRef float64) float64 {
	switch {
	case sumSqErr == 0:
		return 0
	case sumSqRef == 0:
		return math.Inf(1)
	}
	return math.Sqrt(sumSqErr / sumSqRef)
}
