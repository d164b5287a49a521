package runreport

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
	"github.com/flashcore/bench/sdk"
)

// runFixture is the hand-written run every report of this package is
// drawn from; package charts draws it too.
var runFixture = filepath.Join("..", "testdata", "run.json")

// samplesBase and samplesResampled are compare's runs with raw samples.
var (
	samplesBase      = filepath.Join("..", "..", "compare", "testdata", "samples-base.json")
	samplesResampled = filepath.Join("..", "..", "compare", "testdata", "samples-resampled.json")
)

func loadFixture(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.Load(runFixture)
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
		{"table.golden", Options{Format: report.FormatTable}, nil},
		{"markdown.golden", Options{Format: report.FormatMarkdown}, nil},
		{"csv.golden", Options{Format: report.FormatCSV}, nil},
		{"json.golden", Options{Format: report.FormatJSON}, nil},
		{"fallback.table.golden", Options{Format: report.FormatTable, Baseline: "triton"}, nil},
		{"other-baseline.markdown.golden", Options{Format: report.FormatMarkdown, Baseline: "cuda-v8"}, nil},
		{"interrupted.table.golden", Options{Format: report.FormatTable}, interruptAfterFirstCase},
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
			golden.Compare(t, filepath.Join("testdata", tt.golden), out.Bytes())
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
	if err := Render(&out, run, Options{Format: report.FormatJSON}); err != nil {
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
	for _, f := range []report.Format{"", report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON, report.FormatHTML, report.FormatBenchfmt} {
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

func timedResult(caseID, backend string, status results.Status, ns float64) results.Result {
	r := results.Result{CaseID: caseID, Backend: backend, Variant: backend, Label: backend, Status: status}
	if ns > 0 {
		r.Timings = []results.Timing{{L2: sdk.L2Hot, Kernel: results.Stats{N: 20, MedianNs: ns}}}
	}
	return r
}

// timeFixture is a CPU run of the default suite (two of its cases) with
// its time breakdown; one row ran under a budget that stopped its
// sampling. Its recheck steps were given the host's split (`host`) after
// the run, in fixed shares of each step, to draw those lines, and the
// plugins' stop times (plugin_stop_ns, stop_ns) were added after too.
var timeFixture = filepath.Join("testdata", "time.json")

// TestExplainTimeGolden draws where the time went, and the table of a run
// with a budget that stopped a row's sampling.
func TestExplainTimeGolden(t *testing.T) {
	run, err := results.Load(timeFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, markdown := range []bool{false, true} {
		var out bytes.Buffer
		if err := WriteTimeExplanation(&out, run, markdown); err != nil {
			t.Fatal(err)
		}
		name := "explain-time.table.golden"
		if markdown {
			name = "explain-time.markdown.golden"
		}
		golden.Compare(t, filepath.Join("testdata", name), out.Bytes())
	}
	var out bytes.Buffer
	if err := Render(&out, run, Options{Format: report.FormatTable}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("testdata", "budget.table.golden"), out.Bytes())
}

// A file written before the breakdown says it has none.
func TestExplainTimeOfAnOlderFile(t *testing.T) {
	var out bytes.Buffer
	if err := WriteTimeExplanation(&out, loadFixture(t), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no time breakdown") {
		t.Errorf("an older file's explanation:\n%s", out.String())
	}
}
