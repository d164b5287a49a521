package runreport

import (
	"bytes"
	"testing"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
	"github.com/flashcore/bench/sdk"
)

// TestRowsOnSeveralGPUs: a run spread over GPUs shows each row's GPU, and
// a row on another GPU model than the baseline's gets no speedup, with a
// note saying why; a row that names no GPU (a CPU backend) keeps its
// speedup, as in any run.
func TestRowsOnSeveralGPUs(t *testing.T) {
	h200a := &results.RowDevice{Index: 0, Name: "NVIDIA H200", UUID: "GPU-aaaa"}
	h200b := &results.RowDevice{Index: 1, Name: "NVIDIA H200", UUID: "GPU-bbbb"}
	h100 := &results.RowDevice{Index: 2, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-cccc"}
	run := &results.Run{Suite: results.Suite{Name: "gpus", Baseline: "sdpa", L2Modes: []sdk.L2Mode{sdk.L2Hot}}, Status: results.RunComplete}
	for _, r := range []struct {
		backend string
		ns      float64
		device  *results.RowDevice
	}{{"sdpa", 100, h200a}, {"cuda-v8", 200, h200b}, {"triton", 50, h100}, {"cpu-reference", 1000, nil}} {
		row := timedResult("c1", r.backend, results.StatusPass, r.ns)
		row.Device = r.device
		run.Results = append(run.Results, row)
	}
	v := report.NewView(run, "")
	speedups := map[string]float64{}
	for _, r := range v.Cases[0].Rows {
		speedups[r.Backend] = r.Speedup
	}
	if speedups["cuda-v8"] != 0.5 || speedups["triton"] == speedups["triton"] || speedups["cpu-reference"] != 0.1 {
		t.Errorf("speedups %v: want cuda-v8 0.5 (same model, another GPU), none for triton (another model), cpu-reference 0.1 (no GPU named)", speedups)
	}
	var out bytes.Buffer
	if err := Render(&out, run, Options{Format: report.FormatMarkdown}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/gpus.golden", out.Bytes())
}
