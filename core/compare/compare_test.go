package compare

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The fixtures are copies of core/report/testdata/run.json edited by hand,
// written before raw samples were kept (schema version 1), so they test
// the fallback rule: old.json is that run; new.json has rows faster, slower, within the
// threshold and within the noise, pass→FAIL and pass→ERROR regressions,
// FAIL→pass and ERROR→pass fixes, an added and a removed row, and other
// inputs for one case.
var (
	oldRun = filepath.Join("testdata", "old.json")
	newRun = filepath.Join("testdata", "new.json")
)

func load(t *testing.T, paths ...string) []Source {
	t.Helper()
	var sources []Source
	for _, p := range paths {
		run, err := results.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, Source{Path: p, Run: run})
	}
	return sources
}

func compareFixtures(t *testing.T, opts Options, paths ...string) *Comparison {
	t.Helper()
	c, err := Compare(load(t, paths...), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// moveToL4 makes the new run one taken on an L4, under a renamed suite
// with other measurement settings and cold L2 first, that was stopped
// early: everything the header must warn about.
func moveToL4(sources []Source) {
	run := sources[1].Run
	run.Environment.GPUs = []sdk.Device{{Kind: "gpu", Name: "NVIDIA L4", ComputeCapability: "8.9", Multiprocessors: 58}}
	run.Suite.Name = "seed-l4"
	run.Suite.Measurement.MinSamples = 50
	run.Suite.L2Modes = []sdk.L2Mode{sdk.L2Cold, sdk.L2Hot}
	run.Status = results.RunInterrupted
}

// TestPairVerdicts checks the old→new comparison against verdicts worked
// out by hand from the fixtures (see the comment on the fixtures).
func TestPairVerdicts(t *testing.T) {
	c := compareFixtures(t, Options{Threshold: DefaultThreshold}, oldRun, newRun)
	want := Counts{Faster: 2, Slower: 1, Same: 3, Unsure: 2, Regressions: 2, Fixed: 2, Added: 1, Removed: 1, NotCompared: 10}
	if got := c.Total(); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
	if !c.Failed() {
		t.Error("Failed() = false with two regressions and a slower row")
	}
	wantVerdicts := map[rowKey]Verdict{
		{"b1-h8-s512-d64-fp16", "sdpa-flash"}:                          Unsure, // +5.9%, inside ±7.4% noise
		{"b1-h8-s512-d64-fp16", "cpu-reference"}:                       Unsure, // noise unknown
		{"b1-h8-s512-d64-fp16", "cuda-v8[tile_n=32]"}:                  Faster,
		{"b1-h8-s512-d64-fp16", "cuda-v8[tile_n=64]"}:                  Fixed,
		{"b1-h8-s512-d64-fp16", "cuda-v8[tile_n=128]"}:                 Added,
		{"b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers", "sdpa"}:      Slower,
		{"b2-h16-s2048-d128-bf16", "sdpa"}:                             Fixed, // ERROR → pass
		{"b2-h16-s2048-d128-bf16", "cuda-v8[tile_n=32]"}:               Regression,
		{"b1-h4-s128-d32-fp32", "cuda-v8[tile_n=64]"}:                  Regression, // pass → ERROR
		{"b1-h4-s128-d32-fp32", "cuda-v8[tile_n=32]"}:                  NotCompared,
		{"b1-h4-s128-d32-fp32", "cpu-reference"}:                       Removed,
		{"b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers", "cuda-wmma"}: NotCompared,
	}
	for _, r := range c.Rows {
		if want, ok := wantVerdicts[rowKey{r.CaseID, r.Name}]; ok && r.Changes[0].Verdict != want {
			t.Errorf("%s %s: verdict %q, want %q", r.CaseID, r.Name, r.Changes[0].Verdict, want)
		}
	}
	// sdpa passed in two cases: 7460/7410 and 7600/6900.
	wantGeomean := math.Sqrt(7460.0 / 7410 * 7600 / 6900)
	for _, s := range c.Summary {
		if s.Name == "sdpa" && math.Abs(s.Geomean()-wantGeomean) > 1e-12 {
			t.Errorf("sdpa geomean %v, want %v", s.Geomean(), wantGeomean)
		}
	}
}

func TestHeaderWarnsAboutInputsAndMachines(t *testing.T) {
	sources := load(t, oldRun, newRun)
	c, err := Compare(sources, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "no raw samples in seed 0.1.0 2026-11-22 (results schema version 1), seed 0.2.0") ||
		!strings.Contains(c.Warnings[1], "inputs differ for case b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers") {
		t.Errorf("warnings %q, want one about the missing samples and one about the inputs of the outliers case", c.Warnings)
	}
	moveToL4(sources)
	c, err = Compare(sources, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"different devices", "NVIDIA L4", "different suites", "L2 cold first", "did not finish"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings do not mention %q:\n%s", want, joined)
		}
	}
}

func TestNoRegressionComparingARunWithItself(t *testing.T) {
	c := compareFixtures(t, Options{Threshold: DefaultThreshold}, oldRun, oldRun)
	if c.Failed() {
		t.Errorf("a run compared with itself failed: %+v", c.Total())
	}
	if c.Runs[0].Label != "seed 0.1.0 2026-11-22 #1" || c.Runs[1].Label != "seed 0.1.0 2026-11-22 #2" {
		t.Errorf("labels %q and %q, want the position appended to tell them apart", c.Runs[0].Label, c.Runs[1].Label)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "no raw samples") {
		t.Errorf("warnings comparing a run with itself: %q, want only the one about samples", c.Warnings)
	}
}

func TestCompareRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		opts  Options
		want  string
	}{
		{"one run", []string{oldRun}, Options{}, "at least two"},
		{"negative threshold", []string{oldRun, newRun}, Options{Threshold: -0.1}, "threshold"},
		{"threshold in percent", []string{oldRun, newRun}, Options{Threshold: 5}, "e.g. 0.05 for 5%"},
		{"NaN threshold", []string{oldRun, newRun}, Options{Threshold: math.NaN()}, "threshold"},
		{"too few labels", []string{oldRun, newRun}, Options{Labels: []string{"a"}}, "1 label for 2"},
		{"same label twice", []string{oldRun, newRun}, Options{Labels: []string{"a", "a"}}, `"a" given twice`},
		{"empty label", []string{oldRun, newRun}, Options{Labels: []string{"a", ""}}, "empty label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compare(load(t, tt.paths...), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestBackendsSharingALabelAreNotMatched gives two backends the label
// "sdpa": each keeps its own row, named backend/label.
func TestBackendsSharingALabelAreNotMatched(t *testing.T) {
	sources := load(t, oldRun, newRun)
	for i := range sources[1].Run.Results {
		r := &sources[1].Run.Results[i]
		if r.Backend == "cuda-v8" && r.Label == "cuda-v8[tile_n=32]" {
			r.Label = "sdpa"
		}
	}
	c, err := Compare(sources, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range c.Rows {
		names[r.Name] = true
	}
	for _, want := range []string{"pytorch-sdpa/sdpa", "cuda-v8/sdpa"} {
		if !names[want] {
			t.Errorf("no row named %q among %v", want, names)
		}
	}
}

func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gotPath := strings.TrimSuffix(golden, ".golden") + ".got"
	os.WriteFile(gotPath, got, 0o644)
	t.Errorf("output differs from %s (got written to %s; rerun with -update to accept):\n%s",
		golden, gotPath, lineDiff(string(want), string(got)))
}

// lineDiff lists the lines that differ, at most ten.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			out.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			shown++
		}
	}
	return out.String()
}

// TestNoInputWarningForACaseOneRunDidNotReach: a run with no hash for a
// case did not reach it; that is not different data.
func TestNoInputWarningForACaseOneRunDidNotReach(t *testing.T) {
	sources := load(t, oldRun, newRun)
	const id = "b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers"
	later := sources[1].Run
	later.Cases = slices.DeleteFunc(later.Cases, func(c results.Case) bool { return c.ID == id })
	for i := range later.Results {
		if later.Results[i].CaseID == id {
			later.Results[i].InputSHA256 = ""
		}
	}
	c, err := Compare(sources, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "inputs differ") {
			t.Errorf("warning %q for a case the later run has no hash for", w)
		}
	}
}

// A row timed by CUDA events in one run and by CUPTI in the other is
// called out in the header and named, a line per backend, under the table.
func TestMethodChangesAreCalledOut(t *testing.T) {
	sources := load(t, oldRun, newRun)
	changed := ""
	for _, run := range []*results.Run{sources[0].Run, sources[1].Run} {
		for i := range run.Results {
			for j := range run.Results[i].Timings {
				run.Results[i].Timings[j].Method = "cupti+spin"
			}
		}
	}
	later := sources[1].Run
	for i := range later.Results {
		r := &later.Results[i]
		if changed == "" && len(r.Timings) > 0 {
			changed = r.Label
		}
		if r.Label == changed {
			for j := range r.Timings {
				r.Timings[j].Method = "cuda-events+spin"
			}
		}
	}
	c, err := Compare(sources, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	warned := slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "different methods") })
	if !warned {
		t.Errorf("no warning of the method change in %q", c.Warnings)
	}
	var named []string
	for _, n := range c.Notes {
		if strings.Contains(n, "kernel time by") {
			named = append(named, n)
		}
	}
	if len(named) != 1 || !strings.HasPrefix(named[0], changed+": kernel time by cupti+spin in ") ||
		!strings.Contains(named[0], "cuda-events+spin in ") {
		t.Errorf("notes naming the change: %q (want one, for %s)", named, changed)
	}

	same, err := Compare(load(t, oldRun, newRun), Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range same.Warnings {
		if strings.Contains(w, "different methods") {
			t.Errorf("warning %q where every row kept its method", w)
		}
	}
}

// TestCPUSettingsThatDifferAreWarned: a suite's settings apart for the
// rows on a CPU are part of the contract the header compares.
func TestCPUSettingsThatDifferAreWarned(t *testing.T) {
	tests := []struct {
		key    string
		change func(*results.Suite)
	}{
		{"cpu_time_cap", func(s *results.Suite) { s.CPUTimeCap = 100 * time.Millisecond }},
		{"cpu_min_samples", func(s *results.Suite) { s.CPUMinSamples = 6 }},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			sources := load(t, oldRun, newRun)
			tt.change(&sources[1].Run.Suite)
			c, err := Compare(sources, Options{Threshold: DefaultThreshold})
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, w := range c.Warnings {
				found = found || strings.Contains(w, "measurement setting "+tt.key+" differs")
			}
			if !found {
				t.Errorf("no warning that %s differs in %q", tt.key, c.Warnings)
			}
		})
	}
}
