package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// sampleRun fills every field with a finite value, so a round trip can be
// compared with reflect.DeepEqual.
func sampleRun() *Run {
	start := time.Date(2026, 11, 22, 14, 3, 0, 0, time.UTC)
	h100 := sdk.Device{Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", Multiprocessors: 132,
		L2Bytes: 50 << 20, MemoryBytes: 80 << 30, Driver: "580.159.04", Runtime: "CUDA 13.0", PeakTFLOPS: 989, PeakGBps: 3350}
	kernel := Stats{N: 40, MedianNs: 7410, MeanNs: 7433.5, StdevNs: 41.2, MinNs: 7380, MaxNs: 7602, P10Ns: 7391, P90Ns: 7480, RelNoise: 0.0031}
	call := Stats{N: 20, MedianNs: 28200, MeanNs: 28310, StdevNs: 300, MinNs: 27900, MaxNs: 29100, P10Ns: 27950, P90Ns: 28700, RelNoise: 0.012}
	cross := Stats{N: 40, MedianNs: 7400, MeanNs: 7401, StdevNs: 3, MinNs: 7390, MaxNs: 7410, P10Ns: 7395, P90Ns: 7405, RelNoise: 0.001}
	tol := Tolerance{Atol: 2e-3, Rtol: 1e-2, RelL2: 2e-3}
	return &Run{
		SchemaVersion: SchemaVersion,
		Tool:          Tool{Version: "0.1.0", GitCommit: "7e490df"},
		StartedAt:     start,
		FinishedAt:    start.Add(3*time.Minute + 12*time.Second),
		Status:        RunComplete,
		Command:       "flashcore run --suite suites/seed.toml",
		Environment: Environment{Host: "gpu-1", OS: "linux", Arch: "amd64", CPU: "AMD EPYC 9454", Cores: 16,
			GoVersion: "go1.26.8", GPUs: []sdk.Device{h100}, Driver: "580.159.04", CUDA: "13.0"},
		Suite: Suite{Name: "seed", Path: "suites/seed.toml", SHA256: strings.Repeat("ab", 32), Seed: 20251022,
			Baseline: "pytorch-sdpa", Measurement: sdk.DefaultMeasurement(), L2Modes: []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold},
			Tolerances: map[string]Tolerance{"fp16": tol, "fp32": {Atol: 1e-3, Rtol: 1e-3, RelL2: 1e-3}},
			Check:      Check{FullCheckMaxPairs: 1 << 26, SampledRows: 256}},
		Backends: []Backend{{Name: "pytorch-sdpa", Version: "0.1.0", Build: "torch 2.11.0", Path: "bin/pytorch-sdpa",
			Available: true, Device: h100, Variants: []sdk.Variant{{Name: "sdpa", Capabilities: sdk.Capabilities{
				DTypes: []sdk.DType{sdk.FP16}, Causal: true, NonCausal: true, NeedsGPU: true}}}},
			{Name: "cuda-v8", Version: "0.1.0", Available: false, UnavailableReason: "no CUDA device", Device: sdk.Device{Kind: "gpu"}}},
		Cases: []Case{{ID: "b1-h8-s512-d64-fp16", Op: "attention", Params: map[string]string{"batch": "1", "heads": "8",
			"kv_heads": "8", "seq_q": "512", "seq_k": "512", "head_dim": "64", "dtype": "fp16", "causal": "false"}, Shape: sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512,
			HeadDim: 64, DType: sdk.FP16}, Distribution: "normal", InputSHA256: strings.Repeat("1f", 32), FLOPs: 536870912, Bytes: 2097152}},
		Results: []Result{{
			CaseID: "b1-h8-s512-d64-fp16", Backend: "pytorch-sdpa", Variant: "sdpa", Label: "sdpa[math=off]",
			Tunables: map[string]string{"math": "off"}, Status: StatusPass,
			InputSHA256: strings.Repeat("1f", 32), LoadedSHA256: strings.Repeat("1f", 32),
			Check: &CheckResult{MaxAbsErr: 9.8e-4, RelL2Err: 3.1e-4, RowsChecked: 4096, RowsTotal: 4096, Tolerance: tol},
			Timings: []Timing{{L2: sdk.L2Hot, Method: "cuda-events+spin", Kernel: kernel, Call: call, CrossCheck: &cross, SMClockMHz: 1980,
				Samples: &Samples{KernelNs: fakeSamples(7380, 40), CallNs: fakeSamples(27900, 20), CrossCheckNs: fakeSamples(7390, 40)}},
				{L2: sdk.L2Cold, Method: "cuda-events+spin", Kernel: kernel, Call: call,
					Samples: &Samples{KernelNs: fakeSamples(7380, 40), CallNs: fakeSamples(27900, 20)}}},
			Derived:     Derived{TFLOPS: 72.45, GBps: 283.0, PctPeakTFLOPS: 7.33, PctPeakGBps: 8.45},
			Facts:       map[string]string{"kernel": "cudnn_generated_fort_native_sdpa_sm90"},
			Diagnostics: []sdk.Diagnostic{{Severity: sdk.Warning, Summary: "clock below maximum", Detail: "1755 MHz"}},
			StderrTail:  "warning: something <odd> & noisy\n",
			Duration:    1500 * time.Millisecond,
		}, {
			CaseID: "b1-h8-s512-d64-fp16", Backend: "cuda-v8", Variant: "cuda-v8", Label: "cuda-v8",
			Status: StatusSkip, Reason: "backend unavailable: no CUDA device",
		}},
	}
}

// fakeSamples are n raw samples from base up, in a fixed jumbled order.
func fakeSamples(base int64, n int) []int64 {
	samples := make([]int64, n)
	for i := range samples {
		samples[i] = base + int64(i*7%n)*3
	}
	return samples
}

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	want := sampleRun()
	if err := NewWriter(path).Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the run\n got: %+v\nwant: %+v", got, want)
	}
}

// TestEncodingGolden pins the file's layout: field names, their order and
// the indentation are what other tools read.
func TestEncodingGolden(t *testing.T) {
	got, err := Marshal(sampleRun())
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "run.golden.json"), got)
}

func TestNonFiniteFiguresAreNullAndReadBackAsNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	run := sampleRun()
	r := &run.Results[0]
	r.Timings[0].Kernel.RelNoise = inf
	r.Timings[0].Call = Stats{N: 0, MedianNs: nan, MeanNs: nan, StdevNs: nan, MinNs: nan, MaxNs: nan, P10Ns: nan, P90Ns: nan, RelNoise: inf}
	r.Timings[0].Samples.CallNs = nil
	r.Check.MaxAbsErr, r.Check.RelL2Err = nan, math.Inf(-1)
	r.Derived.TFLOPS = inf

	data, err := Marshal(run)
	if err != nil {
		t.Fatalf("Marshal with non-finite figures: %v", err)
	}
	for _, want := range []string{`"rel_noise": null`, `"median_ns": null`, `"max_abs_err": null`, `"rel_l2_err": null`, `"tflops": null`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("encoding lacks %s", want)
		}
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g := back.Results[0]
	for name, v := range map[string]float64{
		"kernel.rel_noise": g.Timings[0].Kernel.RelNoise, "call.median_ns": g.Timings[0].Call.MedianNs,
		"check.max_abs_err": g.Check.MaxAbsErr, "check.rel_l2_err": g.Check.RelL2Err, "derived.tflops": g.Derived.TFLOPS,
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s read back as %v, want NaN", name, v)
		}
	}
	if g.Timings[0].Kernel.MedianNs != 7410 {
		t.Errorf("finite kernel median read back as %v, want 7410", g.Timings[0].Kernel.MedianNs)
	}
}

func TestSaveRefusesNonFiniteWhereNoneIsExpected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	w := NewWriter(path)
	if err := w.Save(sampleRun()); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)
	bad := sampleRun()
	bad.Cases[0].FLOPs = math.NaN()
	err := w.Save(bad)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Save of a NaN FLOPs count: err = %v, want an error naming %s", err, path)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("a failed Save changed the file")
	}
}

func TestLoadRefusesUnknownSchemaVersions(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the error
		schema  bool     // the error wraps ErrUnsupportedSchema
	}{
		{"newer", `{"schema_version": 6, "status": "complete"}`, []string{"unsupported results schema version 6", "reads version 5"}, true},
		{"zero", `{"schema_version": 0}`, []string{"version 0", "start at 1"}, true},
		{"missing", `{"status": "complete"}`, []string{"no schema_version"}, false},
		{"not json", "{\n  \"schema_version\": 1,\n  oops\n}", []string{":3: invalid character 'o'"}, false},
		{"wrong type", "{\n \"schema_version\": 1,\n \"cases\": {}\n}", []string{":3: ", "cases"}, false},
		{"truncated", "{\n \"schema_version\": 1,\n \"results\": [", []string{"unexpected end of JSON input"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := Load(path)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", run)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path) {
				t.Errorf("error %q does not start with the file name", msg)
			}
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if got := errors.Is(err, ErrUnsupportedSchema); got != tt.schema {
				t.Errorf("errors.Is(err, ErrUnsupportedSchema) = %v, want %v", got, tt.schema)
			}
		})
	}
}

func TestSaveLeavesOnlyTheResultsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	w := NewWriter(path)
	run := sampleRun()
	run.Status = RunRunning
	for i := range 3 {
		run.Results = append(run.Results, Result{CaseID: "b1", Backend: "x", Label: "x", Status: StatusPass, Duration: time.Duration(i)})
		if err := w.Save(run); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "results.json" {
		t.Errorf("directory holds %v, want only results.json", names(entries))
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o644 {
		t.Errorf("file mode %v, want 0644", perm)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != len(run.Results) || got.Status != RunRunning {
		t.Errorf("loaded %d results, status %q; want %d, %q", len(got.Results), got.Status, len(run.Results), RunRunning)
	}
}

// TestSaveFailingMidWriteKeepsThePreviousFile stops a Save after half of
// the new content is written: the file must still hold the previous run,
// whole, and the half-written temporary file must be gone.
func TestSaveFailingMidWriteKeepsThePreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	w := NewWriter(path)
	if err := w.Save(sampleRun()); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)

	diskFull := errors.New("no space left on device")
	w.writeTemp = func(f *os.File, data []byte) error {
		if _, err := f.Write(data[:len(data)/2]); err != nil {
			return err
		}
		if current := readFile(t, path); !bytes.Equal(current, before) {
			t.Error("the results file changed while the new content was still being written")
		}
		return diskFull
	}
	next := sampleRun()
	next.Results = next.Results[:1]
	if err := w.Save(next); !errors.Is(err, diskFull) {
		t.Fatalf("Save error = %v, want it to wrap %v", err, diskFull)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("the failed Save changed the results file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed Save left files behind: %v", names(entries))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func names(entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// compareGolden checks got against the golden file; with -update it
// rewrites the file instead. On a mismatch it writes got next to the
// golden file as .got for diffing.
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
	if !bytes.Equal(got, want) {
		gotPath := strings.TrimSuffix(golden, ".golden.json") + ".got.json"
		os.WriteFile(gotPath, got, 0o644)
		t.Errorf("%s differs from the output; got written to %s (diff them, or rerun with -update)", golden, gotPath)
	}
}

// TestVersion1FilesLoadWithoutSamples keeps every file written before raw
// samples were kept readable: the layout of version 1 and the measured
// runs in docs/results.
func TestVersion1FilesLoadWithoutSamples(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "results", "*.json"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no results files in docs/results: %v", err)
	}
	for _, path := range append([]string{filepath.Join("testdata", "schema-v1.json")}, docs...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			run, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if run.SchemaVersion != 1 || len(run.Results) == 0 {
				t.Fatalf("schema_version %d with %d rows, want a version 1 file with rows", run.SchemaVersion, len(run.Results))
			}
			for _, r := range run.Results {
				for _, timing := range r.Timings {
					if timing.Samples != nil {
						t.Fatalf("%s %s has samples in a version 1 file", r.CaseID, r.Label)
					}
				}
			}
		})
	}
}

// TestVersion2FilesLoadWithoutDevices: a file written before rows named
// their GPU (schema version 2) loads with no device, shard or parts.
func TestVersion2FilesLoadWithoutDevices(t *testing.T) {
	run, err := Load(filepath.Join("testdata", "schema-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.SchemaVersion != 2 || len(run.Results) == 0 || run.Shard != nil || run.Parts != nil {
		t.Fatalf("schema_version %d, %d rows, shard %v, parts %v", run.SchemaVersion, len(run.Results), run.Shard, run.Parts)
	}
	for _, r := range run.Results {
		if r.Device != nil || r.Model() != "" {
			t.Errorf("%s %s has a device in a version 2 file", r.CaseID, r.Label)
		}
	}
}

func TestSampleListsAreOneLineEach(t *testing.T) {
	data, err := Marshal(sampleRun())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kernel_ns": [7380, 7401, 7422, `, `"call_ns": [27900, `, `"cross_check_ns": [7390, `} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("encoding lacks %s", want)
		}
	}
	if lines := bytes.Count(data, []byte("\n")); lines > 400 {
		t.Errorf("%d lines: the sample lists were not put on one line each", lines)
	}
}

// TestLoadRefusesSamplesThatDisagreeWithTheirStats: a file whose raw
// samples are not what its stats summarise is refused, naming the row and
// the key.
func TestLoadRefusesSamplesThatDisagreeWithTheirStats(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Samples)
		want   string
	}{
		{"a kernel sample missing", func(s *Samples) { s.KernelNs = s.KernelNs[1:] },
			"samples.kernel_ns holds 39 samples, but its stats say n = 40"},
		{"call samples missing", func(s *Samples) { s.CallNs = nil }, "samples.call_ns holds 0 samples, but its stats say n = 20"},
		{"a negative time", func(s *Samples) { s.CrossCheckNs[3] = -5 }, "samples.cross_check_ns[3] is -5"},
		{"blocks short of the samples", func(s *Samples) { s.KernelBlocks = []int{20, 19} },
			"samples.kernel_blocks add up to 39 samples, but samples.kernel_ns holds 40"},
		{"an empty block", func(s *Samples) { s.KernelBlocks = []int{20, 0, 20} }, "samples.kernel_blocks[1] is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := sampleRun()
			tt.change(run.Results[0].Timings[0].Samples)
			path := filepath.Join(t.TempDir(), "results.json")
			if err := NewWriter(path).Save(run); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			want := path + ": results[0] (case b1-h8-s512-d64-fp16, row sdpa[math=off]) timings[0] (L2 hot): " + tt.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load error %v\nwant one containing %q", err, want)
			}
		})
	}
}

// TestCheckResultRoundTrip: every field of a check survives the results
// file, the non-finite figures as null; a field the JSON mirror forgets
// fails here.
func TestCheckResultRoundTrip(t *testing.T) {
	tol := Tolerance{Atol: 1e-3, Rtol: 1e-2, RelL2: 2e-3}
	want := CheckResult{
		Output:    "dk",
		MaxAbsErr: math.NaN(), RelL2Err: 2.5e-4, NaN: 3, Inf: 1, Unwritten: 2, Violations: 7,
		RowsChecked: 64, RowsTotal: 4096, Sampled: true, RowSeed: 0x9e3779b97f4a7c15, OutOfRange: 5,
		Tolerance: tol,
		Outputs: []CheckResult{
			{Output: "dq", RelL2Err: 1e-4, RowsChecked: 64, RowsTotal: 4096, Tolerance: Tolerance{Atol: 4e-3, Rtol: 4e-2, RelL2: 8e-3}},
			{Output: "dk", RelL2Err: 2.5e-4, RowsChecked: 64, RowsTotal: 4096, Tolerance: tol},
		},
	}
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got CheckResult
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got.MaxAbsErr) {
		t.Errorf("max_abs_err %v, want NaN", got.MaxAbsErr)
	}
	got.MaxAbsErr, want.MaxAbsErr = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip lost fields:\n got %+v\nwant %+v\njson %s", got, want, data)
	}
}

// TestEveryRowRoundTrip: the check of every row is kept in the file and
// read back; a figure that is not finite is null there, NaN when read.
func TestEveryRowRoundTrip(t *testing.T) {
	in := CheckResult{RowsChecked: 8, RowsTotal: 64, Sampled: true,
		EveryRow: &EveryRow{Reference: "fp32 (cpu)", Calibration: 2e-7, MaxAbsErr: 2.5, RelL2Err: math.Inf(1), Violations: 3, Rows: 64}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out CheckResult
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	want := *in.EveryRow
	want.RelL2Err = 0
	if out.EveryRow == nil || !math.IsNaN(out.EveryRow.RelL2Err) {
		t.Fatalf("every_row %+v after the round trip (%s), want rel_l2_err NaN", out.EveryRow, data)
	}
	got := *out.EveryRow
	got.RelL2Err = 0
	if got != want {
		t.Errorf("every_row %+v after the round trip (%s), want %+v", got, data, want)
	}
}
