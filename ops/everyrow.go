package ops

import (
	"fmt"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/fullref"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// calibrationRows is how many rows at random, besides the edges, the fp32
// reference is held to the fp64 one on before it is trusted.
const calibrationRows = 64

// everyRow is what an op offers beyond Op when the harness's fp32
// reference (core/fullref) can check every row of its cases whose fp64
// check samples rows (docs/correctness.md): attention forward.
type everyRow interface {
	// needsEveryRow says whether c's rows get the reference.
	needsEveryRow(c op.Case, settings op.CheckSettings) bool
	// everyRowReference computes it for in, and its largest error against
	// the fp64 reference on rows drawn afresh; skip says why there is
	// none (too little device memory).
	everyRowReference(w *fullref.Worker, c op.Case, in *op.Inputs) (values []float32, calibration float64, skip string, err error)
	// checkEveryRow holds the op's first output to ref.
	checkEveryRow(c op.Case, output []byte, ref *check.FullReference, tol op.Tolerance) check.Report
}

// NeedsEveryRow says whether the harness's fp32 reference checks every
// row of c: an op that offers it, at a case its fp64 check samples.
func NeedsEveryRow(c op.Case, settings op.CheckSettings) bool {
	e, ok := Of(c).(everyRow)
	return ok && e.needsEveryRow(c, settings)
}

// EveryRowReference is the fp32 reference of every row of in, the inputs
// of c, computed by w and calibrated against fp64; nil, with the reason in
// skip, when there is none or its calibration exceeds a quarter of tol's
// atol. An error is the worker's: it is dead then.
func EveryRowReference(w *fullref.Worker, c op.Case, in *op.Inputs, tol op.Tolerance) (ref *check.FullReference, calibration float64, skip string, err error) {
	e, ok := Of(c).(everyRow)
	if !ok {
		return nil, 0, fmt.Sprintf("op %s has no fp32 reference of every row", c.Op), nil
	}
	values, calibration, skip, err := e.everyRowReference(w, c, in)
	switch {
	case err != nil || skip != "":
		return nil, calibration, skip, err
	case !(calibration <= tol.Atol/4):
		return nil, calibration, fmt.Sprintf("its largest error against fp64, %.3g, exceeds a quarter of atol (%.3g): not trusted", calibration, tol.Atol/4), nil
	}
	return &check.FullReference{Values: values, Calibration: calibration, Name: "fp32 (" + w.Device + ")"}, calibration, "", nil
}

// CheckEveryRow holds the first of outputs to ref, the fp32 reference of
// every row of c.
func CheckEveryRow(c op.Case, outputs [][]byte, ref *check.FullReference, tol op.Tolerance) check.Report {
	return Of(c).(everyRow).checkEveryRow(c, outputs[0], ref, tol)
}

func (attentionOp) needsEveryRow(c op.Case, settings op.CheckSettings) bool {
	s := attention.ShapeOf(c)
	return s.Mode.Or() == sdk.Forward && reference.Sampled(s, settings)
}

func (attentionOp) everyRowReference(w *fullref.Worker, c op.Case, in *op.Inputs) ([]float32, float64, string, error) {
	t := tensorsOf(c, in)
	out, err := w.Attention(t)
	if err != nil || out.Skip != "" {
		return nil, 0, out.Skip, err
	}
	return out.O, fullref.Calibrate(t, out.O, calibrationRows), "", nil
}

func (attentionOp) checkEveryRow(c op.Case, output []byte, ref *check.FullReference, tol op.Tolerance) check.Report {
	s := attention.ShapeOf(c)
	return check.CheckEveryRow(output, s.DType, s.HeadDim, ref, tol, func(row, col int) string {
		return fmt.Sprintf("[b%d h%d q%d d%d]", row/(s.SeqQ*s.Heads), row/s.SeqQ%s.Heads, row%s.SeqQ, col)
	})
}
