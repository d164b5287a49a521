package runner

import (
	"slices"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/fullref"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// Where the harness's fp32 reference of every row runs (Config.FullReference).
const (
	FullReferenceAuto = "auto" // on the GPU, where the host has one
	FullReferenceGPU  = "gpu"  // on the GPU, or the run says why not
	FullReferenceCPU  = "cpu"  // on the CPU: slow, for machines without a GPU and for tests
	FullReferenceOff  = "off"
)

// FullReferenceModes are the values Config.FullReference takes ("" is auto).
var FullReferenceModes = []string{FullReferenceAuto, FullReferenceGPU, FullReferenceCPU, FullReferenceOff}

// fullReference is the harness's fp32 reference of the case being run,
// for every row of a case whose fp64 check samples its rows
// (core/fullref): started on the first case that needs it.
type fullReference struct {
	worker   *fullref.Worker
	startErr error
	started  bool
	// ready is closed once the start begun with the plugins' is done.
	ready chan struct{}
	// of is the inputs ref is of; a check of other inputs (the host's
	// fresh ones) does not use it.
	of  *op.Inputs
	ref *check.FullReference
}

// fullReferenceWhere is the device the run's fp32 reference runs on, or
// "" with why there is none; "" with "" when the run does not ask.
func (r *runner) fullReferenceWhere() (string, string) {
	switch r.cfg.FullReference {
	case FullReferenceOff:
		return "", ""
	case FullReferenceCPU:
		return fullref.CPU, ""
	}
	switch {
	case len(hostGPUUUIDs()) > 0:
		return fullref.GPU, ""
	case r.cfg.FullReference == FullReferenceGPU:
		return "", "the host sees no GPU (nvidia-smi)"
	}
	return "", ""
}

// startFullReference starts the reference's process beside the plugins
// when some case of the suite will need it, so that its start (importing
// torch, the CUDA context) overlaps theirs.
func (r *runner) startFullReference() {
	where, _ := r.fullReferenceWhere()
	if where == "" || !slices.ContainsFunc(r.cfg.Suite.Cases, func(c op.Case) bool { return ops.NeedsEveryRow(c, r.cfg.Suite.Check) }) {
		return
	}
	r.full.started = true
	r.full.ready = make(chan struct{})
	go func() {
		defer close(r.full.ready)
		r.full.worker, r.full.startErr = fullref.Start(r.python(), where)
	}()
}

// python is the interpreter the reference runs on: the suite's, else
// Config.Python, else python3.
func (r *runner) python() string {
	switch {
	case r.cfg.Suite.Python != "":
		return r.cfg.Suite.Python
	case r.cfg.Python != "":
		return r.cfg.Python
	}
	return "python3"
}

// prepareFullReference computes the fp32 reference of in, the inputs of
// c, when the case needs one, and records in record what it was or why
// there is none.
func (r *runner) prepareFullReference(c op.Case, in *op.Inputs, record *results.Case) {
	r.full.of, r.full.ref = nil, nil
	if !ops.NeedsEveryRow(c, r.cfg.Suite.Check) {
		return
	}
	where, why := r.fullReferenceWhere()
	began := time.Now()
	defer func() {
		if record.FullReference != nil {
			record.FullReference.Ns = time.Since(began).Nanoseconds()
		}
	}()
	if where == "" {
		if why != "" {
			record.FullReference = &results.FullReference{Skip: why}
		}
		return
	}
	if r.full.ready != nil {
		<-r.full.ready
	}
	if !r.full.started {
		r.full.started = true
		r.full.worker, r.full.startErr = fullref.Start(r.python(), where)
	}
	if r.full.startErr != nil {
		record.FullReference = &results.FullReference{Skip: r.full.startErr.Error()}
		return
	}
	w := r.full.worker
	rec := &results.FullReference{Device: w.Device, Torch: w.Torch}
	record.FullReference = rec
	ref, calibration, skip, err := ops.EveryRowReference(w, c, in, r.cfg.Suite.TolerancesOf(c)[0])
	rec.Calibration, rec.Skip = calibration, skip
	if err != nil {
		rec.Skip = err.Error()
		r.full.startErr = err
		return
	}
	r.full.of, r.full.ref = in, ref
}

// checkEveryRow holds the outputs of a call on in to the case's fp32
// reference, where there is one; report is the fp64 check's, which a
// FAIL here overrides.
func (r *runner) checkEveryRow(c op.Case, in *op.Inputs, outputs [][]byte, tol op.Tolerance, report check.Report) check.Report {
	if r.full.ref == nil || r.full.of != in || len(outputs) == 0 {
		return report
	}
	every := ops.CheckEveryRow(c, outputs, r.full.ref, tol)
	report.EveryRow = every.EveryRow
	if report.Verdict == check.Pass && every.Verdict != check.Pass {
		report.Verdict, report.Reason = every.Verdict, every.Reason
	}
	return report
}

// closeFullReference stops the reference's process.
func (r *runner) closeFullReference() {
	if r.full.ready != nil {
		<-r.full.ready
	}
	if r.full.worker != nil {
		r.full.worker.Close()
	}
}

// everyRowRecord is the record of an every-row check.
func everyRowRecord(e *check.EveryRow) *results.EveryRow {
	if e == nil {
		return nil
	}
	return &results.EveryRow{Reference: e.Reference, Calibration: e.Calibration, MaxAbsErr: e.MaxAbsErr,
		RelL2Err: e.RelL2Err, Violations: e.Violations, Rows: e.Rows}
}
