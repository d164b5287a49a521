package check

import (
	"math"
	"runtime"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// FullReference is a reference of every element of an output, computed
// apart from the fp64 rows (the harness's fp32 attention, core/fullref),
// with its largest error against them.
type FullReference struct {
	// Values hold every element, row after row.
	Values []float32
	// Calibration is the largest |fp32 − fp64| over the rows it was
	// calibrated on; twice it is added to every element's bound.
	Calibration float64
	// Name says what computed it ("fp32 on NVIDIA H100 80GB HBM3").
	Name string
}

// EveryRow is what a check of every row against a FullReference found.
type EveryRow struct {
	Reference   string
	Calibration float64
	// MaxAbsErr and RelL2Err are over every finite element.
	MaxAbsErr, RelL2Err float64
	// Violations counts elements outside atol + rtol·|r| + 2·Calibration.
	Violations int
	Rows       int
}

// CheckEveryRow holds every element of output, rows of cols elements in
// dtype, to ref: the check that finds a wrong row wherever it is, where
// the fp64 check draws a sample. NaN, Inf, unwritten elements and the
// output's size are the fp64 check's to find; this one compares values.
// The reason of a FAIL names the worst element through where.
func CheckEveryRow(output []byte, dtype sdk.DType, cols int, ref *FullReference, tol op.Tolerance, where func(row, col int) string) Report {
	rows := len(ref.Values) / cols
	found := &EveryRow{Reference: ref.Name, Calibration: ref.Calibration, Rows: rows}
	r := Report{Verdict: Pass, RowsTotal: rows, RowsChecked: rows, EveryRow: found}
	if len(output) != len(ref.Values)*dtype.Size() {
		return r.fail("wrong output size: %d bytes, want %d", len(output), len(ref.Values)*dtype.Size())
	}
	slack := tol.Atol + 2*ref.Calibration
	// Row ranges in parallel, each with its own sums, merged in order so
	// that the figures do not depend on the scheduling.
	parts := make([]errorSums, min(runtime.GOMAXPROCS(0), max(rows/64, 1)))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func(sums *errorSums, first, last int) {
			defer wg.Done()
			got := make([]float64, cols)
			rowBytes := cols * dtype.Size()
			for row := first; row < last; row++ {
				inputs.DecodeInto(got, dtype, output[row*rowBytes:(row+1)*rowBytes])
				addRow(sums, row, row, got, ref.Values[row*cols:(row+1)*cols], slack, tol.Rtol)
			}
		}(&parts[i], i*rows/len(parts), (i+1)*rows/len(parts))
	}
	wg.Wait()
	var worst matrixElement
	var sumSqErr, sumSqRef float64
	for _, p := range parts {
		found.MaxAbsErr = max(found.MaxAbsErr, p.maxAbs)
		found.Violations += p.violations
		sumSqErr += p.sumSqErr
		sumSqRef += p.sumSqRef
		if p.worst.found && (!worst.found || p.worst.excess > worst.excess) {
			worst = p.worst
		}
	}
	found.RelL2Err = relativeL2(sumSqErr, sumSqRef)
	switch {
	case found.Violations > 0:
		return r.fail("every row, against the harness's %s reference: %d of %d elements exceed atol + rtol·|ref| (+%.2g, twice its error against fp64); worst at %s (element %d): got %.6g, want %.6g (|error| %.3g > %.3g)",
			ref.Name, found.Violations, len(ref.Values), 2*ref.Calibration, where(worst.row, worst.col), worst.row*cols+worst.col,
			worst.got, worst.want, math.Abs(worst.got-worst.want), slack+tol.Rtol*math.Abs(worst.want))
	case !(found.RelL2Err <= tol.RelL2+ref.Calibration):
		return r.fail("every row, against the harness's %s reference: relative L2 error %.3g exceeds rel_l2 %.3g",
			ref.Name, found.RelL2Err, tol.RelL2)
	}
	return r
}
