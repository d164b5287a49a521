package runner

import (
	"crypto/sha256"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// readOutputs reads every output file of a call, in the op's order; the
// reason is the first file's problem ("" when all are there to check).
func readOutputs(files []sdk.TensorFile, missing string) ([][]byte, string) {
	out := make([][]byte, len(files))
	for i, f := range files {
		data, reason := readOutput(f.Path, f.Bytes(), missing)
		if reason != "" {
			if len(files) > 1 {
				reason = f.Name + ": " + reason
			}
			return nil, reason
		}
		out[i] = data
	}
	return out, ""
}

// clearOutputs removes whatever a backend left at the output paths.
func clearOutputs(files []sdk.TensorFile) error {
	for _, f := range files {
		if err := clearPath(f.Path); err != nil {
			return err
		}
	}
	return nil
}

// checkOutputs holds a call's outputs to the op's reference, each output
// to its own tolerance. The report is the verdict: the first failing
// output's, else the first's. The record is the verdict's figures, with
// every output's own record under Outputs when the op has several.
func (r *runner) checkOutputs(c op.Case, in *op.Inputs, outputs [][]byte) (check.Report, *results.CheckResult) {
	tols := r.cfg.Suite.TolerancesOf(c)
	reports := ops.Of(c).Check(c, in, outputs, r.cfg.Suite.Check, tols)
	reports[0] = r.checkEveryRow(c, in, outputs, tols[0], reports[0])
	return outputsVerdict(ops.Of(c).Spec().OutputsOf(c.Params), reports, tols)
}

// outputsVerdict folds the reports of every output into the row's verdict
// and its record. A failing output's reason names the output, when there
// are several to tell apart.
func outputsVerdict(outputs []op.Tensor, reports []check.Report, tols []op.Tolerance) (check.Report, *results.CheckResult) {
	if len(reports) == 1 {
		return reports[0], checkRecord(reports[0], tols[0])
	}
	verdict := 0
	records := make([]results.CheckResult, len(reports))
	for i, report := range reports {
		records[i] = *checkRecord(report, tols[i])
		records[i].Output = outputs[i].Name
		if report.Verdict != check.Pass && reports[verdict].Verdict == check.Pass {
			verdict = i
		}
	}
	report, record := reports[verdict], records[verdict]
	if report.Verdict != check.Pass {
		report.Reason = outputs[verdict].Name + ": " + report.Reason
	}
	record.Outputs = records
	return report, &record
}

// outputsHash is the SHA-256 of every output concatenated in order.
func outputsHash(outputs [][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, o := range outputs {
		h.Write(o)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// outputsDiff is how two runs' outputs differ, over every output.
func outputsDiff(a, b [][]byte, files []sdk.TensorFile) check.RunDiff {
	var total check.RunDiff
	for i := range a {
		d := check.Diff(a[i], b[i], files[i].DType)
		total.Elements += d.Elements
		total.MaxAbs = max(total.MaxAbs, d.MaxAbs)
		total.MaxULPs = max(total.MaxULPs, d.MaxULPs)
		total.RelL2 = max(total.RelL2, d.RelL2)
	}
	return total
}

// nonFinite reports whether any output holds a NaN or Inf.
func nonFinite(outputs [][]byte, files []sdk.TensorFile) bool {
	for i, o := range outputs {
		if check.NonFinite(o, files[i].DType) {
			return true
		}
	}
	return false
}

// totalBytes is the size of every file together.
func totalBytes(files []sdk.TensorFile) int64 {
	var n int64
	for _, f := range files {
		n += f.Bytes()
	}
	return n
}

// runRequest asks for timed samples, with the output of the last timed
// call written to the timed files.
func runRequest(c op.Case, m sdk.Measurement, timed []sdk.TensorFile) sdk.RunRequest {
	return sdk.RunRequest{CaseID: c.ID, Measurement: m, Output: timed[0].Path, Outputs: timed}
}
