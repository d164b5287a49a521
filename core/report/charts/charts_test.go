package charts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
	"gonum.org/v1/plot"
)

// h100Run is the committed llm suite run on an H100: 26 cases in six
// facets, nine rows each.
var h100Run = filepath.Join("..", "..", "..", "docs", "results", "2026-11-22-h100-llm.json")

// TestChartFiles: the files Draw draws for the fixture and for the H100
// run, by name and title, are the golden lists.
func TestChartFiles(t *testing.T) {
	for goldenFile, path := range map[string]string{
		"charts.fixture.golden":  filepath.Join("..", "testdata", "run.json"),
		"charts.h100-llm.golden": h100Run,
	} {
		t.Run(goldenFile, func(t *testing.T) {
			run, err := results.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			charts, err := Draw(report.NewView(run, ""))
			if err != nil {
				t.Fatal(err)
			}
			var list bytes.Buffer
			for _, c := range charts {
				list.WriteString(c.File + "\t" + c.Title + "\n")
			}
			golden.Compare(t, filepath.Join("testdata", goldenFile), list.Bytes())
		})
	}
}

// TestChartsAreLabelledSVG reads every chart of the H100 run back as XML
// and finds what each must carry: the device, the date, both axis labels
// with their units, and a legend entry for every row drawn on it.
func TestChartsAreLabelledSVG(t *testing.T) {
	run, err := results.Load(h100Run)
	if err != nil {
		t.Fatal(err)
	}
	charts, err := Draw(report.NewView(run, ""))
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]string{"time": "Kernel time (µs, median)", "tflops": "TFLOP/s", "speedup": "Speedup over pytorch-sdpa (×)"}
	for _, c := range charts {
		texts := svgTexts(t, c.SVG)
		all := strings.Join(texts, "\n")
		measure, _, _ := strings.Cut(c.File, "-")
		for _, want := range []string{"NVIDIA H100 80GB HBM3 · 2026-11-22 · suite llm · L2 hot", "Sequence length (tokens)", units[measure], "sdpa", "triton", "cuda-v8"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s: no text %q in the chart; it has %q", c.File, want, texts)
			}
		}
	}
}

// svgTexts parses svg as XML and returns the content of its text elements.
func svgTexts(t *testing.T, svg []byte) []string {
	t.Helper()
	var texts []string
	dec := xml.NewDecoder(bytes.NewReader(svg))
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return texts
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
}

func TestTicks(t *testing.T) {
	labels := func(ticks []plot.Tick) string {
		var out []string
		for _, tk := range ticks {
			out = append(out, tk.Label)
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name   string
		ticks  []plot.Tick
		labels string
	}{
		{"tflops", linearTicks(0, 487), "0 50 100 150 200 250 300 350 400 450"},
		{"small rates", linearTicks(0, 0.34), "0 0.05 0.1 0.15 0.2 0.25 0.3"},
		{"speedups", logTicks(0.013, 1.02), "0.02 0.05 0.1 0.2 0.5 1"},
		{"times", logTicks(45, 310000), "50 100 200 500 1000 2000 5000 10000 20000 50000 100000 200000"},
		{"empty", logTicks(0, 1), ""},
	}
	for _, tt := range tests {
		if got := labels(tt.ticks); got != tt.labels {
			t.Errorf("%s: ticks %q, want %q", tt.name, got, tt.labels)
		}
	}
}
