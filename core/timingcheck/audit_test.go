package timingcheck

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/underncu"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

func TestAuditFinding(t *testing.T) {
	row := func(ours, ref float64, kernels int) ncu.TimingRow {
		return ncu.TimingRow{OursNs: ours, RefNs: ref, Calls: 20, KernelsPerCall: kernels, Verdict: ncu.Pass}
	}
	tests := []struct {
		name  string
		check ncu.TimingRow
		want  string // "" when the row is not flagged
	}{
		{"equal", row(100_000, 100_000, 1), ""},
		{"ncu's extra µs on a tiny kernel", row(4_000, 5_100, 1), ""},
		{"three kernels, each a µs more under ncu", row(10_000, 13_000, 3), ""},
		{"slower than ncu harms only itself", row(300_000, 100_000, 1), ""},
		{"within the relative slack", row(81_000, 100_000, 1), ""},
		{"clock divided by 1.3", row(100_000/1.3, 100_000, 1), "ncu measured 100µs"},
		{"clock divided by 8", row(12_500, 100_000, 1), "reported 12.5µs a call"},
		{"divided by 8 at a microsecond kernel", row(1_000, 8_000, 1), "ncu measured 8µs"},
		{"no figure", ncu.Errored("b", ncu.RowKey{}, 1000, ncu.ReferenceNcu, "ncu profiled no call of this row"), "ncu measured no figure for it: ncu profiled no call"},
		{"skipped", ncu.TimingRow{Verdict: ncu.Skip}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuditFinding(tt.check)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("AuditFinding = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAuditRows: only the PASSed GPU rows of backends whose timing is not
// flashcore's own are candidates, at most perBackend each, and which ones
// is left to chance.
func TestAuditRows(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "flashcore")
	shipped := filepath.Join(dir, "flashcore-plugins")
	for _, f := range []string{self, shipped} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plugins := []host.Plugin{
		{Name: "pytorch-sdpa", Path: shipped},                           // ours: trusted
		{Name: "py:mine.py", Path: shipped, PythonFile: "/x/mine.py"},   // a py: file inside our worker
		{Name: "theirs", Path: filepath.Join(t.TempDir(), "theirs")},    // someone else's binary
		{Name: "theirs-cpu", Path: filepath.Join(t.TempDir(), "other")}, // on the CPU: nothing to audit
	}
	gpu := sdk.Device{Kind: "gpu", Name: "H100"}
	run := &results.Run{Backends: []results.Backend{
		{Name: "pytorch-sdpa", Device: gpu}, {Name: "py:mine.py", Device: gpu}, {Name: "theirs", Device: gpu},
		{Name: "theirs-cpu", Device: sdk.Device{Kind: "cpu"}},
	}}
	timed := func(mode sdk.L2Mode) []results.Timing {
		return []results.Timing{{L2: mode, Method: "cupti", Kernel: results.Stats{N: 10, MedianNs: 5000}}}
	}
	for _, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
		for _, b := range []string{"pytorch-sdpa", "py:mine.py", "theirs", "theirs-cpu"} {
			run.Results = append(run.Results, results.Result{CaseID: c, Backend: b, Label: "x", Status: results.StatusPass, Timings: timed(sdk.L2Hot)})
		}
	}
	run.Results = append(run.Results,
		results.Result{CaseID: "failed", Backend: "theirs", Label: "x", Status: results.StatusFail, Timings: timed(sdk.L2Hot)},
		results.Result{CaseID: "cold", Backend: "theirs", Label: "x", Status: results.StatusPass, Timings: timed(sdk.L2Cold)},
	)

	// Rows the host's clock alone refused, of a trusted backend and of
	// another: each is always taken, beyond perBackend.
	refused := func(caseID, backend string) results.Result {
		return results.Result{CaseID: caseID, Backend: backend, Label: "x", Status: results.StatusError,
			Reason:  runner.ClockReasonPrefix + "the host timed 4 calls",
			Facts:   map[string]string{results.HostClockFact: results.HostClockRefused},
			Timings: timed(sdk.L2Hot)}
	}
	run.Results = append(run.Results, refused("clock", "pytorch-sdpa"), refused("clock", "theirs"),
		// an ERROR of another kind is no candidate
		results.Result{CaseID: "crashed", Backend: "theirs", Label: "x", Status: results.StatusError, Reason: "run: crashed", Timings: timed(sdk.L2Hot)})

	seen := map[string]bool{}
	for seed := range uint64(40) {
		rows := AuditRows(run, plugins, self, 2, rand.New(rand.NewPCG(seed, 1)))
		perBackend := map[string]int{}
		for _, r := range rows {
			perBackend[r.Result.Backend]++
			seen[r.Result.Backend+"/"+r.Result.CaseID] = true
			if r.Result.CaseID == "failed" || r.Result.CaseID == "crashed" {
				t.Errorf("a %s row was chosen", r.Result.Status)
			}
			if r.Check.OursNs != 5000 {
				t.Errorf("%s/%s: ours %v, want the row's median", r.Result.Backend, r.Result.CaseID, r.Check.OursNs)
			}
			wantMode := sdk.L2Hot
			if r.Result.CaseID == "cold" {
				wantMode = sdk.L2Cold
			}
			if r.mode != wantMode {
				t.Errorf("%s: mode %s, want %s", r.Result.CaseID, r.mode, wantMode)
			}
		}
		want := map[string]int{"py:mine.py": 2, "theirs": 3, "pytorch-sdpa": 1}
		if len(perBackend) != len(want) || perBackend["py:mine.py"] != 2 || perBackend["theirs"] != 3 || perBackend["pytorch-sdpa"] != 1 {
			t.Fatalf("seed %d: rows per backend %v, want %v", seed, perBackend, want)
		}
		if got := AuditSummary(rows, 0, 2, nil); !strings.Contains(got, "ncu on 4 row(s) chosen at random (up to 2 per backend whose timing is not flashcore's own) and 2 the host's clock refused") {
			t.Errorf("AuditSummary = %q", got)
		}
		if !seen["pytorch-sdpa/clock"] || !seen["theirs/clock"] {
			t.Fatalf("seed %d: a row the host's clock refused was left out", seed)
		}
	}
	// Over the seeds, every candidate row of each audited backend came up.
	for _, c := range []string{"c1", "c2", "c3", "c4", "c5", "cold"} {
		if !seen["theirs/"+c] {
			t.Errorf("theirs/%s never chosen in 40 draws", c)
		}
	}
	if rows := AuditRows(run, plugins, self, 0, rand.New(rand.NewPCG(1, 1))); len(rows) != 0 {
		t.Errorf("perBackend 0 chose %d rows", len(rows))
	}
}

// TestReconcileClock: a GPU row the host's clock alone refused PASSes
// again, with a warning, only where ncu measured its kernels and confirms
// the time it reported; otherwise it stays an ERROR and says why.
func TestReconcileClock(t *testing.T) {
	measured := func(ours, ref float64) ncu.TimingRow {
		return ncu.TimingRow{OursNs: ours, RefNs: ref, Calls: 20, KernelsPerCall: 40, Verdict: ncu.Pass}
	}
	tests := []struct {
		name       string
		check      ncu.TimingRow
		wantStatus results.Status
		wantReason string
	}{
		{"a host-bound honest row: ncu agrees", measured(12_100_000, 12_000_000), results.StatusPass, ""},
		{"a clock divided by 8: ncu measured 8× more", measured(1_500_000, 12_000_000), results.StatusError, "the timing audit: the backend reported 1.5ms a call; ncu measured 12ms"},
		{"ncu gave no figure", ncu.Errored("b", ncu.RowKey{}, 1000, ncu.ReferenceNcu, "ncu profiled no call of this row"), results.StatusError, "ncu measured no figure"},
		{"ncu skipped it", ncu.TimingRow{Verdict: ncu.Skip, Reason: "no kernel matched"}, results.StatusError, "ncu gave no figure to reconcile it with: no kernel matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := results.Result{Status: results.StatusError, Reason: runner.ClockReasonPrefix + "the host timed 4 calls",
				Facts: map[string]string{results.HostClockFact: results.HostClockRefused}}
			reconcileClock(&res, tt.check, AuditFinding(tt.check))
			if res.Status != tt.wantStatus || !strings.Contains(res.Reason, tt.wantReason) {
				t.Fatalf("status %s %q, want %s containing %q", res.Status, res.Reason, tt.wantStatus, tt.wantReason)
			}
			if tt.wantStatus == results.StatusPass {
				if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != sdk.Warning || !strings.Contains(res.Diagnostics[0].Summary, "host-bound") {
					t.Errorf("diagnostics %+v, want the host-bound warning", res.Diagnostics)
				}
				if res.Facts["host_clock_reason"] == "" || res.Facts[results.HostClockFact] != results.HostClockReconciled {
					t.Errorf("facts %v: the refusal is not kept", res.Facts)
				}
			} else if !strings.HasPrefix(res.Reason, runner.ClockReasonPrefix) {
				t.Errorf("reason %q lost the clock's refusal", res.Reason)
			}
		})
	}
}

func TestAuditReach(t *testing.T) {
	tests := []struct {
		name   string
		plugin host.Plugin
		method string
		want   ncu.Reach
	}{
		{"py: file, whatever it claims", host.Plugin{PythonFile: "f.py"}, "made-up", ncu.Reach{Process: ncu.WorkerProcess, NVTX: true}},
		{"a plugin timing like the CUDA plugins", host.Plugin{}, ncu.MethodCUPTISpin, ncu.Reach{Process: ncu.PluginProcess, KernelRegex: ncu.AttentionKernels, NVTX: true}},
		{"a plugin claiming the bridges' method", host.Plugin{}, ncu.MethodCUPTI, ncu.Reach{Process: ncu.PluginProcess}},
		{"a method no one knows", host.Plugin{}, "my-clock", ncu.Reach{Process: ncu.PluginProcess}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auditReach(tt.plugin, tt.method); got != tt.want {
				t.Errorf("auditReach = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStatusUnderNcu(t *testing.T) {
	row := results.Result{CaseID: "c", Label: "x"}
	under := &results.Run{Results: []results.Result{{CaseID: "c", Label: "x", Status: results.StatusFail, Reason: "wrong rows"}}}
	if status, reason := statusUnderNcu(row, under); status != results.StatusFail || reason != "wrong rows" {
		t.Errorf("got %s %q", status, reason)
	}
	if status, _ := statusUnderNcu(row, nil); status != results.StatusPass {
		t.Errorf("no run: %s", status)
	}
}

// TestJudgeNoKernel: a session under ncu that profiled no kernel at all
// is a finding about a GPU claim, said as such, where another session
// error is only "no figure".
func TestJudgeNoKernel(t *testing.T) {
	r := &Row{Check: ncu.TimingRow{Backend: "b", OursNs: 1000}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no kernel", fmt.Errorf("%w (ncu wrote no report x)", ncu.ErrNoKernel), "launched no GPU kernel under ncu"},
		{"another error", errors.New("the plugin crashed"), "the plugin crashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuditFinding(judge(r, underncu.Outcome{}, tt.err))
			if !strings.Contains(got, tt.want) {
				t.Errorf("finding %q, want %q", got, tt.want)
			}
		})
	}
}
