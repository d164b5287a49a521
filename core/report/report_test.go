package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func loadFixture(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.Load(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRenderGolden renders the hand-written run in every format. The
// fixture covers passes, a FAIL finding, an ERROR failure, skips, hot and
// cold timings, tunables, a case where the baseline's first variant errored
// (so its second variant is the baseline), a case with no passing baseline
// row, a zero median, NaN errors and unknown noise.
func TestRenderGolden(t *testing.T) {
	tests := []struct {
		golden string
		opts   Options
		change func(*results.Run) // nil: the fixture as it is
	}{
		{"table.golden", Options{Format: FormatTable}, nil},
		{"markdown.golden", Options{Format: FormatMarkdown}, nil},
		{"csv.golden", Options{Format: FormatCSV}, nil},
		{"json.golden", Options{Format: FormatJSON}, nil},
		{"fallback.table.golden", Options{Format: FormatTable, Baseline: "triton"}, nil},
		{"other-baseline.markdown.golden", Options{Format: FormatMarkdown, Baseline: "cuda-v8"}, nil},
		{"interrupted.table.golden", Options{Format: FormatTable}, interruptAfterFirstCase},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			run := loadFixture(t)
			if tt.change != nil {
				tt.change(run)
			}
			var out bytes.Buffer
			if err := Render(&out, run, tt.opts); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", tt.golden), out.Bytes())
		})
	}
}

// interruptAfterFirstCase makes the fixture look like a CPU-only run that
// was stopped during its second case.
func interruptAfterFirstCase(run *results.Run) {
	run.Status = results.RunInterrupted
	run.FinishedAt = time.Time{}
	run.Environment.GPUs = nil
	run.Cases = run.Cases[:2]
	run.Results = run.Results[:8]
}

func TestRenderJSONIsTheRun(t *testing.T) {
	run := loadFixture(t)
	var out bytes.Buffer
	if err := Render(&out, run, Options{Format: FormatJSON}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "again.json")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := results.Load(path)
	if err != nil {
		t.Fatalf("json output does not load as a run: %v", err)
	}
	if len(again.Results) != len(run.Results) || again.Suite.Name != run.Suite.Name {
		t.Errorf("json output holds %d results of suite %q, want %d of %q",
			len(again.Results), again.Suite.Name, len(run.Results), run.Suite.Name)
	}
}

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

	v := buildView(run, "")
	want := map[string]struct {
		geomean  float64
		compared int
		counts   counts
	}{
		"base": {1, 2, counts{pass: 2, errored: 1}},
		"fast": {math.Sqrt(8), 2, counts{pass: 2, fail: 1}},
		"slow": {0.25, 1, counts{pass: 2}},
	}
	if len(v.summary) != len(want) {
		t.Fatalf("summary has %d rows, want %d", len(v.summary), len(want))
	}
	for _, s := range v.summary {
		w := want[s.label]
		if got := stats.GeoMean(s.speedups); math.Abs(got-w.geomean) > 1e-12 || len(s.speedups) != w.compared {
			t.Errorf("%s: geomean %v over %d cases, want %v over %d", s.label, got, len(s.speedups), w.geomean, w.compared)
		}
		if s.counts != w.counts {
			t.Errorf("%s: counts %+v, want %+v", s.label, s.counts, w.counts)
		}
	}
	if got := total(v.summary); got != (counts{pass: 6, fail: 1, errored: 1}) {
		t.Errorf("total %+v, want 6 pass, 1 fail, 1 error", got)
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
			if got.backend != tt.wantBackend || got.note != tt.wantNote {
				t.Errorf("chooseBaseline(%q) = %q, note %q; want %q, note %q", tt.requested, got.backend, got.note, tt.wantBackend, tt.wantNote)
			}
		})
	}
	t.Run("nobody passed", func(t *testing.T) {
		got := chooseBaseline(rows[1:2], "pytorch-sdpa", sdk.L2Hot)
		if got.backend != "" || !strings.Contains(got.note, "no speedups") {
			t.Errorf("got %q, note %q; want no baseline and a note saying there are no speedups", got.backend, got.note)
		}
	})
}

func TestCells(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"sub-µs", cell.Duration(512), "0.512 µs"},
		{"µs", cell.Duration(7412), "7.41 µs"},
		{"tens of µs", cell.Duration(28249), "28.2 µs"},
		{"rounds up a digit", cell.Duration(9996), "10.0 µs"},
		{"ms stays µs below 10 ms", cell.Duration(1712400), "1710 µs"},
		{"ms", cell.Duration(41.3e6), "41.3 ms"},
		{"s", cell.Duration(12.5e9), "12.5 s"},
		{"zero", cell.Duration(0), "0 µs"},
		{"NaN", cell.Duration(math.NaN()), "—"},
		{"noise", cell.Noise(0.0031), "±0.3%"},
		{"unknown noise", cell.Noise(math.Inf(1)), "±?"},
		{"speedup", cell.Ratio(7410.0 / 12350), "0.60×"},
		{"no speedup", cell.Ratio(math.NaN()), "—"},
		{"tiny speedup", cell.Ratio(7410 / 41.3e6), "0.000179×"},
		{"csv count", cell.Number(536870912), "536870912"},
		{"csv tiny", cell.Number(3.1e-7), "3.1e-07"},
		{"small rate", rateCell(0.0129993), "0.0130"},
		{"unknown peak", percentCell(0), "—"},
		{"rel err", relErrCell(&results.CheckResult{RelL2Err: 3.1e-4}), "3.1e-04"},
		{"NaN rel err", relErrCell(&results.CheckResult{RelL2Err: math.NaN()}), "NaN"},
		{"unchecked", relErrCell(nil), "—"},
		{"long reason", verdictCell(&results.Result{Status: results.StatusError, Reason: strings.Repeat("x", 80)}),
			"ERROR: " + strings.Repeat("x", 59) + "…"},
		{"multi-line reason", verdictCell(&results.Result{Status: results.StatusFail, Reason: "bad\n  output"}), "FAIL: bad output"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestRenderSparseRuns renders runs a crash or an early interrupt can
// leave: no rows at all, and a row whose case the run does not list.
func TestRenderSparseRuns(t *testing.T) {
	orphan := &results.Run{Results: []results.Result{timedResult("b9-lost", "cuda-v8", results.StatusPass, 100)}}
	for name, run := range map[string]*results.Run{"empty": {}, "orphan row": orphan} {
		for _, f := range formats {
			var out bytes.Buffer
			if err := Render(&out, run, Options{Format: f}); err != nil {
				t.Errorf("%s, %s: %v", name, f, err)
			}
			if name == "orphan row" && !strings.Contains(out.String(), "b9-lost") {
				t.Errorf("%s, %s: the row's case is cell.Missing from the output:\n%s", name, f, out.String())
			}
		}
	}
}

func TestCheckFormat(t *testing.T) {
	for _, f := range []Format{"", FormatTable, FormatMarkdown, FormatCSV, FormatJSON, FormatHTML, FormatBenchfmt} {
		if err := CheckFormat(f); err != nil {
			t.Errorf("CheckFormat(%q) = %v", f, err)
		}
	}
	err := CheckFormat("xml")
	if err == nil || err.Error() != `unknown format "xml": want table, markdown, csv, json, html or benchfmt` {
		t.Errorf("CheckFormat(xml) = %v", err)
	}
	if err := Render(&bytes.Buffer{}, &results.Run{}, Options{Format: "xml"}); err == nil {
		t.Error("Render accepted an unknown format")
	}
}

// compareGolden checks got against the golden file, or rewrites it with
// -update. On a mismatch it writes a .got file and shows where they differ.
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
			fmt.Fprintf(&out, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
			shown++
		}
	}
	return out.String()
}
