package runreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// writeBenchfmt writes the run in Go's benchmark text format
// (golang.org/x/perf/benchfmt), so that `benchstat old.txt new.txt`
// compares two runs. The configuration keys name what must match for two
// runs to be compared: the machine, the device and its driver, the tool,
// the suite and the L2 mode (a block of its own per mode, "l2: hot").
// benchstat puts runs whose keys differ in separate tables, so what
// changes with every build or run (the version and commit, the seed, the
// date) is on the first line, which starts with a capital and is no key:
// readers of the format skip it. Every passing row gives one line per raw
// kernel sample,
//
//	BenchmarkAttention/case=b1-h8-s512-d64-fp16/row=sdpa 1 9320 ns/op 57.6 TFLOP/s 225 GB/s
//
// with one iteration per line, since each sample is one call. A results
// file without raw samples (schema 1) gives one line per row holding the
// median, and the first line says so. Rows that did not pass are left
// out: a wrong output has no speed.
func writeBenchfmt(w io.Writer, v *report.View) error {
	out := bufio.NewWriter(w)
	fmt.Fprintln(out, benchTitle(v.Run))
	for _, kv := range benchConfig(v.Run) {
		fmt.Fprintf(out, "%s: %s\n", kv.key, kv.value)
	}
	for _, mode := range append([]sdk.L2Mode{v.Primary}, v.Extra...) {
		fmt.Fprintf(out, "l2: %s\n", mode)
		for _, c := range v.Cases {
			for _, r := range c.Rows {
				writeBenchRow(out, c, r, mode)
			}
		}
	}
	return out.Flush()
}

// benchTitle is the first line: the build, seed and start of the run, and
// what the Benchmark lines hold.
func benchTitle(run *results.Run) string {
	parts := []string{"FlashCore bench run"}
	if tool := report.ToolLine(run.Tool); tool != "" {
		parts = append(parts, tool)
	}
	if run.Suite.Name != "" {
		parts = append(parts, fmt.Sprintf("suite %s seed %d", run.Suite.Name, run.Suite.Seed))
	}
	if !run.StartedAt.IsZero() {
		parts = append(parts, "started "+run.StartedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return cell.OneLine(strings.Join(parts, ", ") + "; " + sampleKind(run))
}

// benchConfig is the file-level configuration; keys the run has no value
// for are left out.
func benchConfig(run *results.Run) []item {
	e := run.Environment
	all := []item{
		{"goos", e.OS}, {"goarch", e.Arch}, {"cpu", e.CPU},
		{"device", report.DeviceLine(e)}, {"driver", e.Driver}, {"cuda", e.CUDA},
		{"tool", "flashcore"}, {"suite", run.Suite.Name},
	}
	var config []item
	for _, kv := range all {
		if kv.value != "" {
			config = append(config, item{kv.key, cell.OneLine(kv.value)})
		}
	}
	return config
}

// sampleKind says what the Benchmark lines hold.
func sampleKind(run *results.Run) string {
	for _, r := range run.Results {
		for _, t := range r.Timings {
			if t.Samples != nil && len(t.Samples.KernelNs) > 0 {
				return "one line per raw kernel sample"
			}
		}
	}
	return "one line per row holding its median: this results file keeps no raw samples"
}

func writeBenchRow(out *bufio.Writer, c report.Case, r report.Row, mode sdk.L2Mode) {
	t, ok := r.TimingFor(mode)
	if !ok || r.Status != results.StatusPass || t.Kernel.N == 0 {
		return
	}
	name := "BenchmarkAttention/case=" + benchName(c.ID) + "/row=" + benchName(r.Name)
	if t.Samples != nil && len(t.Samples.KernelNs) > 0 {
		for _, ns := range t.Samples.KernelNs {
			fmt.Fprintf(out, "%s 1 %s\n", name, benchValues(c, float64(ns)))
		}
		return
	}
	fmt.Fprintf(out, "%s 1 %s\n", name, benchValues(c, t.Kernel.MedianNs))
}

// benchValues is one sample's kernel time with the rates it gives.
func benchValues(c report.Case, ns float64) string {
	values := cell.Number(ns) + " ns/op"
	if c.Info != nil && ns > 0 {
		if c.Info.FLOPs > 0 {
			values += " " + cell.Number(roundSig(c.Info.FLOPs/ns/1e3, 6)) + " TFLOP/s"
		}
		if c.Info.Bytes > 0 {
			values += " " + cell.Number(roundSig(c.Info.Bytes/ns, 6)) + " GB/s"
		}
	}
	return values
}

// benchName makes a name part safe for the format: no spaces, and no
// slash, which benchstat reads as the start of another name part.
func benchName(s string) string {
	return strings.NewReplacer(" ", "_", "/", "_").Replace(s)
}

// roundSig rounds a derived rate to six significant digits: more would be
// noise from the division, not measurement.
func roundSig(x float64, digits int) float64 {
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64)
	return rounded
}
