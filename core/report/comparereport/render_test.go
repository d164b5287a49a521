package comparereport

import (
	"bytes"
	"encoding/csv"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
	"github.com/flashcore/bench/sdk"
)

// The comparison fixtures are compare's own (see the comments on them in
// core/compare's tests); the golden files of what `flashcore compare`
// prints live here, beside the renderer that draws them.
var (
	oldRun           = filepath.Join("..", "..", "compare", "testdata", "old.json")
	newRun           = filepath.Join("..", "..", "compare", "testdata", "new.json")
	newerRun         = filepath.Join("..", "..", "compare", "testdata", "newer.json")
	samplesBase      = filepath.Join("..", "..", "compare", "testdata", "samples-base.json")
	samplesResampled = filepath.Join("..", "..", "compare", "testdata", "samples-resampled.json")
	samplesPlanted   = filepath.Join("..", "..", "compare", "testdata", "samples-planted.json")
)

// plantedSlowBackend and plantedFail are the changes planted in
// samples-planted.json.
const plantedSlowBackend = "cpu-reference"

var plantedFail = rowKey{"b1-h2-s128-d32-fp32", "sdpa-flash"}

type rowKey struct{ caseID, name string }

func load(t *testing.T, paths ...string) []compare.Source {
	t.Helper()
	var sources []compare.Source
	for _, p := range paths {
		run, err := results.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		// The file as compare's own tests name it, so that the header
		// reads the same from either package.
		sources = append(sources, compare.Source{Path: filepath.Join("testdata", filepath.Base(p)), Run: run})
	}
	return sources
}

func comparisonGolden(name string) string { return filepath.Join("testdata", name) }

var ablationLabels = []string{"baseline", "+cp.async", "+vectorised I/O"}

func TestRenderComparisonGolden(t *testing.T) {
	tests := []struct {
		golden string
		format report.Format
		opts   compare.Options
		paths  []string
		change func([]compare.Source) // nil: the fixtures as they are
	}{
		{"pair.table.golden", report.FormatTable, compare.Options{Threshold: compare.DefaultThreshold}, []string{oldRun, newRun}, nil},
		{"pair.markdown.golden", report.FormatMarkdown, compare.Options{Threshold: compare.DefaultThreshold}, []string{oldRun, newRun}, nil},
		{"pair.csv.golden", report.FormatCSV, compare.Options{Threshold: compare.DefaultThreshold}, []string{oldRun, newRun}, nil},
		{"pair-cpu-threshold.table.golden", report.FormatTable, compare.Options{Threshold: compare.DefaultThreshold, CPUThreshold: compare.DefaultCPUThreshold},
			[]string{oldRun, newRun}, nil},
		{"pair-cpu-threshold.csv.golden", report.FormatCSV, compare.Options{Threshold: compare.DefaultThreshold, CPUThreshold: compare.DefaultCPUThreshold},
			[]string{oldRun, newRun}, nil},
		{"ablation.table.golden", report.FormatTable, compare.Options{Threshold: compare.DefaultThreshold, Labels: ablationLabels},
			[]string{oldRun, newRun, newerRun}, nil},
		{"ablation.markdown.golden", report.FormatMarkdown, compare.Options{Threshold: compare.DefaultThreshold, Labels: ablationLabels},
			[]string{oldRun, newRun, newerRun}, nil},
		{"ablation.csv.golden", report.FormatCSV, compare.Options{Threshold: compare.DefaultThreshold, Labels: ablationLabels},
			[]string{oldRun, newRun, newerRun}, nil},
		{"other-machine.table.golden", report.FormatTable, compare.Options{Threshold: compare.DefaultThreshold}, []string{oldRun, newRun}, moveToL4},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			sources := load(t, tt.paths...)
			if tt.change != nil {
				tt.change(sources)
			}
			c, err := compare.Compare(sources, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Render(&out, c, tt.format); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, comparisonGolden(tt.golden), out.Bytes())
		})
	}
}

// moveToL4 makes the new run one taken on an L4, under a renamed suite
// with other measurement settings and cold L2 first, that was stopped
// early: everything the header must warn about.
func moveToL4(sources []compare.Source) {
	run := sources[1].Run
	run.Environment.GPUs = []sdk.Device{{Kind: "gpu", Name: "NVIDIA L4", ComputeCapability: "8.9", Multiprocessors: 58}}
	run.Suite.Name = "seed-l4"
	run.Suite.Measurement.MinSamples = 50
	run.Suite.L2Modes = []sdk.L2Mode{sdk.L2Cold, sdk.L2Hot}
	run.Status = results.RunInterrupted
}

// TestPlantedComparisonGolden draws the comparison of the run with the
// planted changes in every format; the CSV, read back as a spreadsheet
// would, flags exactly the planted rows.
func TestPlantedComparisonGolden(t *testing.T) {
	c, err := compare.Compare(load(t, samplesBase, samplesPlanted), compare.Options{Threshold: compare.DefaultThreshold, Labels: []string{"base", "planted"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[rowKey]compare.Verdict{plantedFail: compare.Regression}
	for _, r := range c.Rows {
		if r.Backend == plantedSlowBackend {
			want[rowKey{r.CaseID, r.Name}] = compare.Slower
		}
	}
	for _, format := range formats {
		t.Run(string(format), func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, c, format); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, comparisonGolden("planted."+string(format)+".golden"), out.Bytes())
			if format == report.FormatCSV {
				checkCSVFlags(t, out.String(), want)
			}
		})
	}
}

// checkCSVFlags reads the verdicts back from the CSV, as a spreadsheet
// would, and finds the same flagged rows.
func checkCSVFlags(t *testing.T, text string, want map[rowKey]compare.Verdict) {
	t.Helper()
	records, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	column := map[string]int{}
	for i, name := range records[0] {
		column[name] = i
	}
	got := map[rowKey]compare.Verdict{}
	for _, rec := range records[1:] {
		switch v := compare.Verdict(rec[column["verdict"]]); v {
		case compare.Faster, compare.Slower, compare.Regression, compare.Fixed:
			got[rowKey{rec[column["case_id"]], rec[column["row"]]}] = v
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("the CSV flags %v, want %v", got, want)
	}
}

// TestCallOutsGolden: what differs between two runs besides the samples
// is named: the driver, a plugin's build, a kernel's source hash, SM
// clocks more than 2% apart (not the one 0.8% apart), and throttling.
func TestCallOutsGolden(t *testing.T) {
	sources := load(t, samplesBase, samplesResampled)
	old, later := sources[0].Run, sources[1].Run
	old.Environment.Driver, old.Environment.CUDA = "580.159.04", "13.0"
	later.Environment.Driver, later.Environment.CUDA = "575.57.08", "12.9"
	for i := range later.Backends {
		if b := &later.Backends[i]; b.Name == "pytorch-sdpa" {
			b.Version, b.Build = "2.12.0+cu130", "python 3.12.3, torch 2.12.0+cu130"
		}
	}
	setClocks(old, func(*results.Result) float64 { return 1980 })
	setClocks(later, func(r *results.Result) float64 {
		switch {
		case r.Backend == plantedSlowBackend:
			return 1890 // −4.5%: called out
		case r.Label == "sdpa":
			return 1965 // −0.8%: below the threshold
		}
		return 1980
	})
	for _, run := range []*results.Run{old, later} {
		for i := range run.Results {
			if r := &run.Results[i]; r.Backend == plantedSlowBackend {
				r.Facts = map[string]string{"kernel_source_sha256": strings.Repeat(map[bool]string{true: "ab", false: "cd"}[run == old], 32)}
			}
			if r := &run.Results[i]; run == later && r.CaseID == plantedFail.caseID && r.Label == "sdpa-math" {
				r.Timings[0].Throttled, r.Timings[0].ThrottleNote = true, "SM clock 1980 → 1755 MHz during sampling"
			}
		}
	}
	c, err := compare.Compare(sources, compare.Options{Threshold: compare.DefaultThreshold, Labels: []string{"before", "after"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []report.Format{report.FormatTable, report.FormatMarkdown} {
		var out bytes.Buffer
		if err := Render(&out, c, format); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, comparisonGolden("callouts."+string(format)+".golden"), out.Bytes())
	}
	if len(c.Notes) != 5 || len(c.Differences) != 2 {
		t.Errorf("notes %q and differences %q: want four clock notes and one throttling note, a build and a kernel change", c.Notes, c.Differences)
	}
}

func setClocks(run *results.Run, clock func(*results.Result) float64) {
	for i := range run.Results {
		r := &run.Results[i]
		for j := range r.Timings {
			r.Timings[j].SMClockMHz = clock(r)
		}
	}
}
