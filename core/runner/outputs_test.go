package runner

import (
	"reflect"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
)

// TestOutputsVerdict: the row's verdict is the first failing output's,
// its reason names the output, and the record keeps every output's check
// with its own tolerance; an op of one output records that output alone,
// as results before schema 5 did.
func TestOutputsVerdict(t *testing.T) {
	pass := check.Report{Verdict: check.Pass, RelL2Err: 1e-4, RowsChecked: 8, RowsTotal: 8}
	fail := check.Report{Verdict: check.Fail, Reason: "rel L2 0.3 over 0.002", RelL2Err: 0.3, RowsChecked: 8, RowsTotal: 8}
	loose, tight := op.Tolerance{Atol: 1, Rtol: 1, RelL2: 1}, op.Tolerance{Atol: 1e-3, Rtol: 1e-3, RelL2: 2e-3}
	two := []op.Tensor{{Name: "dq"}, {Name: "dk"}}
	record := func(r check.Report, tol op.Tolerance, output string) results.CheckResult {
		c := *checkRecord(r, tol)
		c.Output = output
		return c
	}
	tests := []struct {
		name       string
		outputs    []op.Tensor
		reports    []check.Report
		tols       []op.Tolerance
		wantReason string
		want       results.CheckResult
	}{
		{"one output", []op.Tensor{{Name: "o"}}, []check.Report{fail}, []op.Tolerance{tight},
			fail.Reason, record(fail, tight, "")},
		{"every output passes: the first decides", two, []check.Report{pass, pass}, []op.Tolerance{loose, tight},
			"", withOutputs(record(pass, loose, "dq"), record(pass, loose, "dq"), record(pass, tight, "dk"))},
		{"the second fails", two, []check.Report{pass, fail}, []op.Tolerance{loose, tight},
			"dk: " + fail.Reason, withOutputs(record(fail, tight, "dk"), record(pass, loose, "dq"), record(fail, tight, "dk"))},
		{"both fail: the first decides", two, []check.Report{fail, fail}, []op.Tolerance{loose, tight},
			"dq: " + fail.Reason, withOutputs(record(fail, loose, "dq"), record(fail, loose, "dq"), record(fail, tight, "dk"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			report, got := outputsVerdict(tc.outputs, tc.reports, tc.tols)
			if report.Reason != tc.wantReason {
				t.Errorf("reason %q, want %q", report.Reason, tc.wantReason)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("record\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func withOutputs(verdict results.CheckResult, outputs ...results.CheckResult) results.CheckResult {
	verdict.Outputs = outputs
	return verdict
}
