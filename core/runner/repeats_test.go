package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

// TestRepeatsRecordHowRunsDiffer runs the checked run three times on real
// plugins: cpu-reference gives three identical outputs; test-flaky's
// second output is one step off in one element and its third holds a NaN,
// and the row's repeats say so in figures.
func TestRepeatsRecordHowRunsDiffer(t *testing.T) {
	plugins := []host.Plugin{
		{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")},
		{Name: "test-flaky", Path: buildtest.Plugin(t, "test-flaky", "internal/testplugins/flaky")},
	}
	doc := strings.Replace(tinySuite, "seq_q = [64, 96]", "seq_q = [64]", 1) + "[check]\nrepeat = 3\n"
	s, err := suite.Parse("tiny.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	id := s.Cases[0].ID
	if r := find(run, id, "cpu-reference"); r == nil || r.Repeats == nil || *r.Repeats != (results.Repeats{Runs: 3}) {
		t.Errorf("cpu-reference repeats: %+v", r)
	}
	r := find(run, id, "test-flaky")
	if r == nil || r.Repeats == nil {
		t.Fatalf("test-flaky: no repeats: %+v", r)
	}
	got := *r.Repeats
	if got.Runs != 3 || got.Differing != 2 || got.DifferingElements != 1 || got.NonFiniteRuns != 1 ||
		!(got.MaxAbsDiff > 0) || got.MaxULPs < 1 || !(got.RelL2Diff > 0) {
		t.Errorf("test-flaky repeats %+v: want 3 runs, 2 differing in 1 element, 1 with a NaN, finite figures above 0", got)
	}
}
