package report

import (
	"math"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/sdk"
)

// TestSummaryGeomean checks the summary against numbers worked out by hand:
// the baseline takes 100 ns in three cases; "fast" takes 50 and 25 ns in
// the first two (speedups 2 and 4) and fails the third, so its geometric
// mean is sqrt(2·4) = 2.828 over 2 cases. "slow" takes 400 ns in case 1
// (0.25×) and 100 ns in case 3, where the baseline errored, so only case 1
// counts: 0.25 over 1 case.
func TestSummaryGeomean(t *testing.T) {
	run := &results.Run{Suite: results.Suite{Baseline: "base", L2Modes: []sdk.L2Mode{sdk.L2Hot}}}
	add := func(caseID, backend string, status results.Status, ns float64) {
		run.Results = append(run.Results, timedResult(caseID, backend, status, ns))
	}
	add("c1", "base", results.StatusPass, 100)
	add("c1", "fast", results.StatusPass, 50)
	add("c1", "slow", results.StatusPass, 400)
	add("c2", "base", results.StatusPass, 100)
	add("c2", "fast", results.StatusPass, 25)
	add("c3", "base", results.StatusError, 0)
	add("c3", "fast", results.StatusFail, 10)
	add("c3", "slow", results.StatusPass, 100)

	v := NewView(run, "")
	want := map[string]struct {
		geomean  float64
		compared int
		counts   Counts
	}{
		"base": {1, 2, Counts{Pass: 2, Errored: 1}},
		"fast": {math.Sqrt(8), 2, Counts{Pass: 2, Fail: 1}},
		"slow": {0.25, 1, Counts{Pass: 2}},
	}
	if len(v.Summary) != len(want) {
		t.Fatalf("summary has %d rows, want %d", len(v.Summary), len(want))
	}
	for _, s := range v.Summary {
		w := want[s.Label]
		if got := stats.GeoMean(s.Speedups); math.Abs(got-w.geomean) > 1e-12 || len(s.Speedups) != w.compared {
			t.Errorf("%s: geomean %v over %d cases, want %v over %d", s.Label, got, len(s.Speedups), w.geomean, w.compared)
		}
		if s.Counts != w.counts {
			t.Errorf("%s: counts %+v, want %+v", s.Label, s.Counts, w.counts)
		}
	}
	if got := Total(v.Summary); got != (Counts{Pass: 6, Fail: 1, Errored: 1}) {
		t.Errorf("total %+v, want 6 pass, 1 fail, 1 error", got)
	}
}

// TestHostBoundRowsTakeNoSpeedup: a row the audit reconciled with ncu
// PASSes, but takes no speedup and is never the baseline.
func TestHostBoundRowsTakeNoSpeedup(t *testing.T) {
	run := &results.Run{Suite: results.Suite{Baseline: "bound", L2Modes: []sdk.L2Mode{sdk.L2Hot}}}
	bound := timedResult("c1", "bound", results.StatusPass, 10)
	bound.Facts = map[string]string{results.HostClockFact: results.HostClockReconciled}
	run.Results = append(run.Results, bound, timedResult("c1", "base", results.StatusPass, 100))
	v := NewView(run, "")
	if v.Baseline.Backend != "base" {
		t.Errorf("baseline %q, want base: a host-bound row is no baseline", v.Baseline.Backend)
	}
	for _, s := range v.Summary {
		if s.Label == "bound" && (len(s.Speedups) != 0 || s.Counts.Pass != 1) {
			t.Errorf("bound: %d speedups, counts %+v; want none and one PASS", len(s.Speedups), s.Counts)
		}
	}
	if !Comparable(&run.Results[1], sdk.L2Hot) || Comparable(&run.Results[0], sdk.L2Hot) {
		t.Errorf("Comparable: the host-bound row must not be, the other must")
	}
}

func timedResult(caseID, backend string, status results.Status, ns float64) results.Result {
	r := results.Result{CaseID: caseID, Backend: backend, Variant: backend, Label: backend, Status: status}
	if ns > 0 {
		r.Timings = []results.Timing{{L2: sdk.L2Hot, Kernel: results.Stats{N: 20, MedianNs: ns}}}
	}
	return r
}

func TestChooseBaseline(t *testing.T) {
	rows := []results.Result{
		timedResult("c1", "cpu-reference", results.StatusPass, 1e6),
		timedResult("c1", "broken", results.StatusFail, 100),
		timedResult("c1", "cuda-v8", results.StatusPass, 100),
	}
	tests := []struct {
		requested   string
		wantBackend string
		wantNote    string
	}{
		{"cuda-v8", "cuda-v8", ""},
		{"pytorch-sdpa", "cpu-reference", "baseline pytorch-sdpa not in this run; speedups are against cpu-reference"},
		{"broken", "cpu-reference", "baseline broken passed no case; speedups are against cpu-reference"},
		{"", "cpu-reference", "no baseline set; speedups are against cpu-reference"},
	}
	for _, tt := range tests {
		t.Run(tt.requested, func(t *testing.T) {
			got := chooseBaseline(rows, tt.requested, sdk.L2Hot)
			if got.Backend != tt.wantBackend || got.Note != tt.wantNote {
				t.Errorf("chooseBaseline(%q) = %q, note %q; want %q, note %q", tt.requested, got.Backend, got.Note, tt.wantBackend, tt.wantNote)
			}
		})
	}
	t.Run("nobody passed", func(t *testing.T) {
		got := chooseBaseline(rows[1:2], "pytorch-sdpa", sdk.L2Hot)
		if got.Backend != "" || !strings.Contains(got.Note, "no speedups") {
			t.Errorf("got %q, note %q; want no baseline and a note saying there are no speedups", got.Backend, got.Note)
		}
	})
}
