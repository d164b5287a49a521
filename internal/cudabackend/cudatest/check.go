package cudatest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/sdk"
)

// FactsEveryCaseRecords are the Prepared facts a CUDA backend must fill.
var FactsEveryCaseRecords = []string{
	"kernel_function", "kernel_source_sha256", "kernel_target", "kernel_compiler", "kernel_compiler_flags",
	"registers_per_thread", "spill_bytes_per_thread", "static_shared_bytes", "dynamic_shared_bytes",
	"max_threads_per_block", "occupancy_blocks_per_sm",
}

// available describes backend and fails t unless it is available; it
// closes the backend when t ends.
func available(t *testing.T, backend sdk.Backend) sdk.Description {
	t.Helper()
	if closer, ok := backend.(sdk.Closer); ok {
		t.Cleanup(func() {
			if err := closer.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	desc, err := backend.Describe(context.Background())
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if !desc.Available {
		t.Fatalf("%s is unavailable on a machine with a GPU: %s", desc.Name, desc.UnavailableReason)
	}
	if len(desc.Variants) != 1 {
		t.Fatalf("%s offers %d variants, want 1", desc.Name, len(desc.Variants))
	}
	t.Logf("%s %s (%s) on %s, CC %s, %d SMs, %.0f MHz, peak %.0f TFLOP/s, %.0f GB/s, driver %s",
		desc.Name, desc.Version, desc.Build, desc.Device.Name, desc.Device.ComputeCapability,
		desc.Device.Multiprocessors, desc.Device.SMClockMHz, desc.Device.PeakTFLOPS, desc.Device.PeakGBps, desc.Device.Driver)
	return desc
}

// Check runs every case through the backend's lifecycle (Prepare, Fetch,
// Release) and compares the output with the fp64 reference. The first case
// is also sampled briefly with a hot and a cold L2.
func Check(t *testing.T, backend sdk.Backend, cases []Case) {
	t.Helper()
	desc := available(t, backend)
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			checkCase(t, backend, desc.Variants[0].Name, c, filepath.Join(dir, fmt.Sprint(i)), i == 0)
		})
	}
}

func checkCase(t *testing.T, backend sdk.Backend, variant string, c Case, dir string, sample bool) {
	ctx := context.Background()
	req, q, k, v := writeInputs(t, c, variant, dir)
	prepared, err := backend.Prepare(ctx, req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: %+v", prepared.Diagnostics)
	}
	defer func() {
		if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: req.CaseID}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if prepared.LoadedSHA256 != req.InputSHA256 {
		t.Errorf("LoadedSHA256 = %s, want %s", prepared.LoadedSHA256, req.InputSHA256)
	}
	for _, key := range FactsEveryCaseRecords {
		if prepared.Facts[key] == "" {
			t.Errorf("fact %s is missing (facts: %v)", key, prepared.Facts)
		}
	}
	if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	got, err := os.ReadFile(req.Files.Output)
	if err != nil {
		t.Fatal(err)
	}
	want := reference(c.Shape, decode(c.Shape.DType, q), decode(c.Shape.DType, k), decode(c.Shape.DType, v))
	errs := compare(c.Shape.DType, got, want)
	tol := Tolerances[c.Shape.DType]
	t.Logf("%s: max abs %.2e, rel L2 %.2e, unwritten %d, non-finite %d (%s, %s regs, %s B spills, occupancy %s)",
		prepared.Facts["kernel_function"], errs.MaxAbs, errs.RelL2, errs.Unwritten, errs.NonFinite,
		prepared.Facts["kernel_target"], prepared.Facts["registers_per_thread"],
		prepared.Facts["spill_bytes_per_thread"], prepared.Facts["occupancy_blocks_per_sm"])
	if !errs.Within(tol) {
		t.Errorf("output outside tolerance %+v: %+v", tol, errs)
	}
	if sample {
		for _, mode := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
			checkRun(t, backend, req.CaseID, mode)
		}
	}
}

// writeInputs makes seeded normal inputs for c, rounds them to the dtype and
// writes them as the host would.
func writeInputs(t *testing.T, c Case, variant, dir string) (sdk.PrepareRequest, []byte, []byte, []byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := c.Shape
	q := encode(s.DType, randomNormal(1, s.QElements()))
	k := encode(s.DType, randomNormal(2, s.KVElements()))
	v := encode(s.DType, randomNormal(3, s.KVElements()))
	files := sdk.Tensors{
		Q: filepath.Join(dir, "q.bin"), K: filepath.Join(dir, "k.bin"), V: filepath.Join(dir, "v.bin"),
		Output: filepath.Join(dir, "o.bin"),
	}
	for path, data := range map[string][]byte{files.Q: q, files.K: k, files.V: v} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := sha256.New()
	h.Write(q)
	h.Write(k)
	h.Write(v)
	req := sdk.PrepareRequest{
		CaseID: c.Name(), Variant: variant, Shape: s, Tunables: c.Tunables, Files: files,
		InputSHA256: hex.EncodeToString(h.Sum(nil)),
	}
	return req, q, k, v
}

// quickMeasurement keeps the sampling in tests short.
func quickMeasurement(mode sdk.L2Mode) sdk.Measurement {
	m := sdk.DefaultMeasurement()
	m.WarmupRuns, m.WarmupTime = 3, 0
	m.MinSamples, m.MaxSamples, m.TimeCap = 10, 50, 200*time.Millisecond
	m.CallSamples = 5
	m.L2 = mode
	return m
}

func checkRun(t *testing.T, backend sdk.Backend, caseID string, mode sdk.L2Mode) sdk.Samples {
	t.Helper()
	samples, err := backend.Run(context.Background(), sdk.RunRequest{CaseID: caseID, Measurement: quickMeasurement(mode)})
	if err != nil {
		t.Fatalf("Run (%s L2): %v", mode, err)
	}
	switch {
	case len(samples.KernelTimes) < 10:
		t.Errorf("Run (%s L2): %d kernel times, want at least MinSamples 10", mode, len(samples.KernelTimes))
	case len(samples.CallTimes) != 5:
		t.Errorf("Run (%s L2): %d call times, want 5", mode, len(samples.CallTimes))
	case samples.Method != "cuda-events+spin":
		t.Errorf("Run (%s L2): method %q", mode, samples.Method)
	case samples.SMClockMHz < 100 || samples.SMClockMHz > 5000:
		t.Errorf("Run (%s L2): SM clock %.0f MHz is implausible", mode, samples.SMClockMHz)
	}
	for _, d := range append(slices.Clone(samples.KernelTimes), samples.CallTimes...) {
		if d <= 0 {
			t.Errorf("Run (%s L2): non-positive time %v", mode, d)
			break
		}
	}
	if mode == sdk.L2Cold && samples.Facts["l2_flush_bytes"] == "" {
		t.Errorf("Run (cold L2): no l2_flush_bytes fact: %v", samples.Facts)
	}
	return samples
}

// CheckUnsupported checks that cases outside the capabilities, and unknown
// tunables, come back as Unsupported diagnostics without reading inputs.
func CheckUnsupported(t *testing.T, backend sdk.Backend) {
	t.Helper()
	desc := available(t, backend)
	good := shape(1, 2, 2, 64, 64, 64, false, sdk.FP16)
	bad := map[string]sdk.PrepareRequest{
		"fp32":                             {Shape: shape(1, 2, 2, 64, 64, 64, false, sdk.FP32)},
		"head dim 96":                      {Shape: shape(1, 2, 2, 64, 64, 96, false, sdk.FP16)},
		"heads not a multiple of kv heads": {Shape: shape(1, 3, 2, 64, 64, 64, false, sdk.FP16)},
		"unknown tunable":                  {Shape: good, Tunables: map[string]string{"no_such_tunable": "1"}},
		"unknown variant":                  {Shape: good, Variant: "no-such-variant"},
	}
	for name, req := range bad {
		t.Run(name, func(t *testing.T) {
			req.CaseID = name
			if req.Variant == "" {
				req.Variant = desc.Variants[0].Name
			}
			req.Files = sdk.Tensors{Q: "/nonexistent/q", K: "/nonexistent/k", V: "/nonexistent/v", Output: "/nonexistent/o"}
			prepared, err := backend.Prepare(context.Background(), req)
			if err != nil {
				t.Fatalf("Prepare: %v, want an Unsupported diagnostic", err)
			}
			if len(prepared.Diagnostics) != 1 || prepared.Diagnostics[0].Severity != sdk.Unsupported {
				t.Fatalf("Prepare diagnostics %+v, want one Unsupported", prepared.Diagnostics)
			}
			t.Logf("unsupported: %s", prepared.Diagnostics[0].Summary)
		})
	}
}

// Timing measures one shape with the contract's default measurement (time
// cap shortened to 1 s) in hot and cold L2 mode and logs the figures.
func Timing(t *testing.T, backend sdk.Backend, s sdk.Shape, tunables map[string]string) {
	t.Helper()
	desc := available(t, backend)
	c := Case{Shape: s, Tunables: tunables}
	req, _, _, _ := writeInputs(t, c, desc.Variants[0].Name, t.TempDir())
	ctx := context.Background()
	prepared, err := backend.Prepare(ctx, req)
	if err != nil || len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: %v %+v", err, prepared.Diagnostics)
	}
	defer backend.Release(ctx, sdk.ReleaseRequest{CaseID: req.CaseID})
	for _, mode := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
		m := sdk.DefaultMeasurement()
		m.TimeCap = time.Second
		m.L2 = mode
		samples, err := backend.Run(ctx, sdk.RunRequest{CaseID: req.CaseID, Measurement: m})
		if err != nil {
			t.Fatalf("Run (%s L2): %v", mode, err)
		}
		if len(samples.KernelTimes) < m.MinSamples {
			t.Fatalf("Run (%s L2): %d samples", mode, len(samples.KernelTimes))
		}
		kernel := median(samples.KernelTimes)
		t.Logf("TIMING %s %s %s L2: kernel %.2f µs (n=%d, noise %.2f%%, %.1f TFLOP/s), call %.2f µs, SM clock %.0f MHz, %s, spin %s µs, retries %s",
			desc.Name, c.Name(), mode, us(kernel), len(samples.KernelTimes), 100*sdk.RelativeNoise(samples.KernelTimes),
			flops(s)/kernel.Seconds()/1e12, us(median(samples.CallTimes)), samples.SMClockMHz,
			prepared.Facts["kernel_function"], samples.Facts["spin_us"], samples.Facts["spin_retries"])
	}
}

func median(ds []time.Duration) time.Duration {
	sorted := make([]float64, len(ds))
	for i, d := range ds {
		sorted[i] = float64(d)
	}
	slices.Sort(sorted)
	return time.Duration(sdk.MedianSorted(sorted))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// flops counts 4·B·H·D per unmasked query–key pair (docs/measurement.md).
func flops(s sdk.Shape) float64 {
	pairs := s.SeqQ * s.SeqK
	if s.Causal {
		pairs = 0
		for i := range s.SeqQ {
			pairs += min(i+1, s.SeqK)
		}
	}
	return 4 * float64(s.Batch*s.Heads*s.HeadDim) * float64(pairs)
}
