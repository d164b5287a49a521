package runner

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// runRow takes one row through the lifecycle on one case, in a workspace
// of its own. It always returns a result: a skip, a pass or fail with its
// check, or an error with reason.
func (r *runner) runRow(ctx context.Context, rw row, c op.Case, in *caseInputs) results.Result {
	start := time.Now()
	res := results.Result{
		CaseID:   c.ID,
		Backend:  rw.backend.plugin.Name,
		Variant:  rw.variant.Name,
		Label:    rw.label,
		Tunables: rw.tunables,
	}
	if reason := r.rowSkipReason(rw, c); reason != "" {
		res.Status, res.Reason = results.StatusSkip, reason
		return res
	}
	res.InputSHA256 = in.inputs.SHA256
	r.clock = newRowClock(start)
	defer func() { r.clock = nil }()
	res.Budget = r.rowBudget()
	restarting := rw.backend.instance == nil || rw.backend.instance.Exited()
	if err := r.ensureStarted(ctx, rw.backend); err != nil {
		r.failRow(&res, rw.backend, "restart", err)
		return res
	}
	if restarting {
		r.clock.mark(results.PhaseStart, "")
	}
	rw.backend.stderrMark = rw.backend.instance.StderrWritten()
	ws, err := newWorkspace(rowCaseDir(rw.backend, in.name), c, in.inputs, rw.backend.instance.MakeDir)
	if err != nil {
		res.Status, res.Reason = results.StatusError, "host: "+err.Error()
		return res
	}
	r.clock.mark(results.PhaseInputs, "")
	mark := r.isolateRow(rw.backend)
	r.clock.mark(results.PhaseWalls, "")
	measured := time.Now()
	r.lifecycle(ctx, rw, c, in.inputs, ws, &res)
	// A plugin that died took its workspace with it (the reaper removes
	// it): its row already says why, and that is no tampering.
	if reason := ws.tampered(in.hashes); reason != "" && rw.backend.instance != nil && !rw.backend.instance.Exited() {
		res.Status, res.Reason = results.StatusError, reason
	}
	r.checkInterference(mark, time.Since(measured), &res)
	ws.remove()
	res.Duration = time.Since(start)
	res.Time = r.clock.finish(start.Add(res.Duration))
	return res
}

// lifecycle runs Prepare, Fetch, the check, Run per L2 mode and Release.
// Any call that errors makes the row an error and restarts the plugin.
func (r *runner) lifecycle(ctx context.Context, rw row, c op.Case, t *op.Inputs, ws *workspace, res *results.Result) {
	b := rw.backend
	api := b.instance.Backend()
	prepared, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (sdk.Prepared, error) {
		return api.Prepare(ctx, ops.PrepareRequest(c, rw.variant.Name, rw.tunables, ws.inputs, ws.outputs, t.SHA256))
	})
	if err != nil {
		r.failRow(res, b, "prepare", err)
		return
	}
	r.clock.mark(results.PhasePrepare, "")
	res.LoadedSHA256 = prepared.LoadedSHA256
	addFacts(res, pluginFacts(res, prepared.Facts))
	res.Diagnostics = append(res.Diagnostics, prepared.Diagnostics...)
	defer r.release(ctx, b, c.ID, res)
	if applyDiagnostics(res, prepared.Diagnostics) {
		return
	}
	if prepared.LoadedSHA256 != t.SHA256 {
		res.Status = results.StatusFail
		res.Reason = fmt.Sprintf("input hash mismatch: backend loaded %s, host wrote %s", prepared.LoadedSHA256, t.SHA256)
		return
	}
	ok, checkedCall := r.checkOutput(ctx, b, c, t, ws, res)
	if !ok {
		return
	}
	var fresh *freshInputs
	if !r.cfg.UnderProfiler {
		fresh = r.startFreshInputs(c, b.description.Device)
	}
	r.measure(ctx, b, c, t, ws, res)
	if res.Status == results.StatusPass && !r.cfg.UnderProfiler {
		r.hostClockCheck(ctx, b, c, ws, checkedCall, res, fresh)
	}
}

// checkOutput runs the checked run and compares it with the reference. It
// reports whether the row should go on to timing: a wrong output is still
// timed (the time of a wrong kernel is a finding too), a dead plugin not.
//
// The checked run is done Check.Repeat times: every output must be
// bit-identical to the first (the determinism gate) and no run may crash
// (the stability gate). Res.Repeats records by how much the runs differed
// and how many held NaN or Inf, for the gates to judge.
//
// checkedCall is the host's own time of the first checked call, Fetch's
// whole RPC: an upper bound of one call's time, which sizes the host's
// batch (clock.go).
func (r *runner) checkOutput(ctx context.Context, b *backend, c op.Case, t *op.Inputs, ws *workspace, res *results.Result) (ok bool, checkedCall time.Duration) {
	start := time.Now()
	output, ok := r.fetch(ctx, b, c, ws, res)
	checkedCall = time.Since(start)
	if !ok || output == nil {
		return ok, checkedCall
	}
	report, record := r.checkOutputs(c, t, output)
	res.Check = record
	if report.Verdict == check.Pass {
		res.Status = results.StatusPass
	} else {
		res.Status, res.Reason = results.StatusFail, report.Reason
	}
	first := outputsHash(output)
	addFacts(res, map[string]string{"output_sha256": hex.EncodeToString(first[:])})
	r.clock.mark(results.PhaseCheck, "")
	if r.cfg.Suite.Check.Repeat < 2 {
		return true, checkedCall
	}
	res.Repeats = &results.Repeats{Runs: 1}
	if report.NaN+report.Inf > 0 {
		res.Repeats.NonFiniteRuns++
	}
	for run := 2; run <= r.cfg.Suite.Check.Repeat; run++ {
		if run > 2 {
			r.clock.mark(results.PhaseCheck, "") // the comparison of the run before
		}
		again, ok := r.fetch(ctx, b, c, ws, res)
		if !ok || again == nil {
			return ok, checkedCall
		}
		res.Repeats.Runs++
		if nonFinite(again, ws.outputs) {
			res.Repeats.NonFiniteRuns++
		}
		if outputsHash(again) == first {
			continue
		}
		diff := outputsDiff(output, again, ws.outputs)
		addRepeatDiff(res.Repeats, diff)
		if res.Status != results.StatusPass {
			continue
		}
		if !r.mayDiffer(c, output, again) {
			res.Status = results.StatusFail
			res.Reason = fmt.Sprintf("nondeterministic: checked run %d differs from run 1 in %d elements", run, diff.Elements)
			continue
		}
		// The outputs that differ are ones kernels accumulate with
		// atomics: the run is held to the reference like the first, and
		// the difference is a finding.
		if rerun, _ := r.checkOutputs(c, t, again); rerun.Verdict != check.Pass {
			res.Status, res.Reason = results.StatusFail, fmt.Sprintf("checked run %d: %s", run, rerun.Reason)
			continue
		}
		addFacts(res, map[string]string{"nondeterministic": fmt.Sprintf(
			"checked runs differ in up to %d elements of %s (max |diff| %.3g, %d ulps), each within the check: a finding, not a failure (atomic accumulation)",
			res.Repeats.DifferingElements, strings.Join(differingOutputs(ws.outputs, output, again), ", "), res.Repeats.MaxAbsDiff, res.Repeats.MaxULPs)})
	}
	r.clock.mark(results.PhaseCheck, "")
	return true, checkedCall
}

// mayDiffer reports whether the outputs of two runs differ only in
// outputs the op declares may differ between runs (op.Tensor.MayDiffer).
func (r *runner) mayDiffer(c op.Case, a, b [][]byte) bool {
	outputs := ops.Of(c).Spec().OutputsOf(c.Params)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) && (i >= len(outputs) || !outputs[i].MayDiffer) {
			return false
		}
	}
	return true
}

// differingOutputs names the outputs whose bytes differ between a and b.
func differingOutputs(files []sdk.TensorFile, a, b [][]byte) []string {
	var names []string
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			names = append(names, files[i].Name)
		}
	}
	return names
}

// addRepeatDiff folds one differing run into the row's repeat figures.
func addRepeatDiff(rep *results.Repeats, d check.RunDiff) {
	rep.Differing++
	rep.DifferingElements = max(rep.DifferingElements, d.Elements)
	rep.MaxAbsDiff = max(rep.MaxAbsDiff, d.MaxAbs)
	rep.MaxULPs = max(rep.MaxULPs, d.MaxULPs)
	rep.RelL2Diff = max(rep.RelL2Diff, d.RelL2)
}

// fetch does one checked run and reads its output. ok is false when the
// row is finished (a plugin error or a diagnostic); a nil output with ok
// true means the output could not be taken (no file, a wrong size, not a
// regular file), which the row records as a FAIL.
func (r *runner) fetch(ctx context.Context, b *backend, c op.Case, ws *workspace, res *results.Result) ([][]byte, bool) {
	api := b.instance.Backend()
	if err := clearOutputs(ws.outputs); err != nil {
		res.Status, res.Reason = results.StatusError, "host: "+err.Error()
		return nil, false
	}
	fetched, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (sdk.Fetched, error) {
		return api.Fetch(ctx, sdk.FetchRequest{CaseID: c.ID})
	})
	if err != nil {
		r.failRow(res, b, "fetch", err)
		return nil, false
	}
	r.clock.mark(results.PhaseCheckedRun, "")
	res.Diagnostics = append(res.Diagnostics, fetched.Diagnostics...)
	if applyDiagnostics(res, fetched.Diagnostics) {
		return nil, false
	}
	output, reason := readOutputs(ws.outputs, "backend wrote no output file")
	if reason != "" {
		res.Status, res.Reason = results.StatusFail, reason
		return nil, true
	}
	return output, true
}

// clearPath removes whatever is at path, a file or a directory a backend
// left there, so that a stale output is never read as a new one.
func clearPath(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("clear %s: %w", path, err)
	}
	return nil
}

// measure takes the timed samples, once per L2 mode the suite asks for,
// and holds each sample set to the host's rules (plausible.go) before it
// is recorded. After each Run the output the last timed call left is
// checked like the checked run's, with rows drawn afresh.
func (r *runner) measure(ctx context.Context, b *backend, c op.Case, t *op.Inputs, ws *workspace, res *results.Result) {
	api := b.instance.Backend()
	for i, mode := range r.cfg.Suite.L2Modes {
		m := r.cfg.Suite.Measurement
		m.L2 = mode
		if b.description.Device.Kind == "cpu" {
			m = r.cfg.Suite.OnCPU(m)
		}
		if i > 0 {
			// The Run before, moments ago on the same buffers, kept the
			// device busy: this one warms up as a block after a move does.
			m = sdk.ResumedWarmUp(m)
		}
		capped := r.budgetCap(&m, res.Budget, len(r.cfg.Suite.L2Modes)-i)
		if err := clearOutputs(ws.timed); err != nil {
			res.Status, res.Reason = results.StatusError, "host: "+err.Error()
			return
		}
		started := time.Now()
		samples, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (sdk.Samples, error) {
			return api.Run(ctx, runRequest(c, m, ws.timed))
		})
		runWall := time.Since(started)
		if err != nil {
			r.failRow(res, b, fmt.Sprintf("run (L2 %s)", mode), err)
			return
		}
		plugin := takePhases(&samples)
		r.clock.markRun(results.PhaseRun, mode, plugin)
		if capped && stoppedByTimeCap(plugin) {
			res.Budget.Hit = append(res.Budget.Hit, mode)
		}
		res.Diagnostics = append(res.Diagnostics, samples.Diagnostics...)
		if applyDiagnostics(res, samples.Diagnostics) {
			return
		}
		if reason := r.refuseSamples(ops.Of(c).Work(c, t), samples, m, runWall, b.description.Device); reason != "" {
			refuse(res, reason)
			return
		}
		res.Timings = append(res.Timings, timingRecord(mode, samples))
		r.checkTimedOutput(c, t, ws, mode, res)
		r.clock.mark(results.PhaseTimedCheck, mode)
	}
	if len(res.Timings) > 0 {
		res.Derived = derive(ops.Of(c).Work(c, t), res.Timings[0].Kernel, b.description.Device)
	}
}

// refuse records samples the host will not believe. The row becomes an
// ERROR; a row that already FAILed its check stays a FAIL (it is excluded
// from speedups either way) with both reasons.
func refuse(res *results.Result, reason string) {
	if res.Status == results.StatusFail {
		res.Reason += "; and its timing was refused: " + reason
		return
	}
	res.Status, res.Reason = results.StatusError, reason
}

// refuseSamples applies the sample rules, the stopping rule (against the
// host's clock of the Run, runWall), the physical ceilings and the
// kernel-within-call consistency, in that order; "" accepts the samples.
func (r *runner) refuseSamples(work op.Work, s sdk.Samples, m sdk.Measurement, runWall time.Duration, device sdk.Device) string {
	if reason := SampleRuleViolation(s, m); reason != "" {
		return "samples refused: " + reason
	}
	if reason := StopRuleViolation(s, m, runWall); reason != "" {
		return "samples refused: " + reason
	}
	if reason := physicalViolation(work, s, m.L2, device, ceilingsFor(device, r.cpuCeilings)); reason != "" {
		return reason
	}
	if device.Kind != "gpu" {
		// On a CPU the kernel and call times time the same work at
		// different moments; their order says nothing.
		return ""
	}
	return consistencyViolation(s)
}

// checkTimedOutput checks what the last timed call of mode left. A wrong
// timed output fails a row that passed its checked run: the kernel behaves
// only when it is being checked.
func (r *runner) checkTimedOutput(c op.Case, t *op.Inputs, ws *workspace, mode sdk.L2Mode, res *results.Result) {
	_, record, reason := r.checkOutputFiles(c, t, ws.timed,
		"Run wrote no output file at RunRequest.Output (the sdk contract: the output the last timed call left)")
	res.TimedChecks = append(res.TimedChecks, *record)
	if reason != "" && res.Status == results.StatusPass {
		res.Status = results.StatusFail
		res.Reason = fmt.Sprintf("the output of the last timed call (L2 %s) is wrong, though the checked call's was right: %s", mode, reason)
	}
}

// checkOutputFiles reads the outputs a backend left in files and checks
// them against the reference of t; reason is why it is wrong ("" when right),
// missing when there is no output to read, and the report and the record's
// figures are empty then.
func (r *runner) checkOutputFiles(c op.Case, t *op.Inputs, files []sdk.TensorFile, missing string) (check.Report, *results.CheckResult, string) {
	outputs, reason := readOutputs(files, missing)
	if reason != "" {
		return check.Report{}, checkRecord(check.Report{}, r.cfg.Suite.TolerancesOf(c)[0]), reason
	}
	report, record := r.checkOutputs(c, t, outputs)
	return report, record, report.Reason
}

func (r *runner) release(ctx context.Context, b *backend, caseID string, res *results.Result) {
	defer r.clock.mark(results.PhaseRelease, "")
	if b.instance == nil {
		return
	}
	api := b.instance.Backend()
	_, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, api.Release(ctx, sdk.ReleaseRequest{CaseID: caseID})
	})
	if err != nil && res.Status != results.StatusError {
		r.failRow(res, b, "release", err)
	}
}

// failRow records a plugin failure: the call that failed, the error, and
// the tail of the plugin's stderr. When the plugin's stderr during the row
// holds a compiler's error line, the reason starts with it: the exception
// ("PassManager::run failed") says less, and the IR a compiler dumps after
// it can push it out of the tail. The plugin's whole stderr is kept for
// settleText. The plugin is killed; the next row starts it again with a
// fresh process (and, for CUDA, a fresh context).
func (r *runner) failRow(res *results.Result, b *backend, step string, err error) {
	rowStderr := ""
	if b.instance != nil {
		// Give a dying process a moment to flush stderr before reading it.
		time.Sleep(20 * time.Millisecond)
		res.StderrTail = b.instance.StderrTail()
		rowStderr = b.instance.StderrSince(b.stderrMark)
		r.rowStderr = b.instance.StderrSince(0)
	}
	res.Status = results.StatusError
	res.Reason = step + ": " + describeError(err, r.cfg.Suite.CallTimeout, res.StderrTail)
	if diagnostic := compilerError(rowStderr); diagnostic != "" && !strings.Contains(res.Reason, diagnostic) &&
		!errors.Is(err, context.DeadlineExceeded) {
		res.Reason = step + ": " + diagnostic + "; " + res.Reason
	}
	r.restart(b)
}

// describeError says what went wrong in the words a user needs: a hang is
// named as such, and a crash is told by the last thing the plugin said,
// which is more use than the transport's "EOF".
func describeError(err error, timeout time.Duration, stderrTail string) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s (plugin hung); killed", timeout)
	case errors.Is(err, sdk.ErrPluginDied):
		if last := meaningfulLine(stderrTail); last != "" {
			return "plugin crashed: " + last
		}
		return "plugin crashed: " + err.Error()
	}
	return err.Error()
}

// call runs one plugin call under its own deadline.
func call[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(callCtx)
}

// applyDiagnostics turns a skip or failure diagnostic into the row's status
// and reports whether the row is finished.
func applyDiagnostics(res *results.Result, diags []sdk.Diagnostic) bool {
	for _, d := range diags {
		switch d.Severity {
		case sdk.Unsupported:
			res.Status, res.Reason = results.StatusSkip, joinDiag(d)
			return true
		case sdk.Failure:
			res.Status, res.Reason = results.StatusFail, joinDiag(d)
			return true
		}
	}
	return false
}

func joinDiag(d sdk.Diagnostic) string {
	if d.Detail == "" {
		return d.Summary
	}
	return d.Summary + ": " + d.Detail
}

// pluginFacts are the facts a plugin gave, less those under the host's
// own keys (results.HostOwnedFact), which a warning on res names.
func pluginFacts(res *results.Result, facts map[string]string) map[string]string {
	var dropped []string
	for k := range facts {
		if results.HostOwnedFact(k) {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return facts
	}
	slices.Sort(dropped)
	kept := maps.Clone(facts)
	for _, k := range dropped {
		delete(kept, k)
	}
	names, _ := untrusted.Cap(untrusted.Line(strings.Join(dropped, ", ")), 1<<10)
	res.Diagnostics = append(res.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
		Summary: "facts dropped: the host writes these keys itself: " + names})
	return kept
}

func addFacts(res *results.Result, facts map[string]string) {
	if len(facts) == 0 {
		return
	}
	if res.Facts == nil {
		res.Facts = map[string]string{}
	}
	for k, v := range facts {
		res.Facts[k] = v
	}
}

func progressLine(done, total int, res results.Result) string {
	verdict := strings.ToUpper(string(res.Status))
	detail := ""
	if len(res.Timings) > 0 {
		detail = " " + formatDuration(time.Duration(res.Timings[0].Kernel.MedianNs))
	}
	if res.Reason != "" {
		line, _ := untrusted.Cap(untrusted.Line(firstLineOf(res.Reason)), progressReasonBytes)
		detail += " (" + line + ")"
	}
	return fmt.Sprintf("[%d/%d] %s %s: %s%s", done, total, res.CaseID, res.Label, verdict, detail)
}

// progressReasonBytes bounds the reason a progress line shows; the table
// and the results file keep more.
const progressReasonBytes = 300

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func formatDuration(d time.Duration) string {
	us := float64(d) / 1e3
	if us >= 10000 {
		return fmt.Sprintf("%.2f ms", us/1e3)
	}
	return fmt.Sprintf("%.1f µs", us)
}
