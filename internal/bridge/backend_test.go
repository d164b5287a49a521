package bridge_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

const callTimeout = 2 * time.Minute

// newProbe is a Backend over testdata/probe_backend.py, a real worker whose
// variants compute attention or misbehave on purpose.
func newProbe(t *testing.T) *bridge.Backend {
	t.Helper()
	b := bridge.New(probeConfig(bridgetest.LogOnFailure(t, "worker output")))
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func probeConfig(output io.Writer) bridge.Config {
	return bridge.Config{Name: "probe", Module: "probe_backend", Scripts: os.DirFS("testdata"), Output: output}
}

// shared is one probe Backend for the tests that do not need a fresh one:
// starting a worker (importing torch) takes seconds. Tests that kill its
// worker rely on Prepare starting a new one, which is what they test.
var shared = bridge.New(probeConfig(io.Discard))

func TestMain(m *testing.M) {
	code := m.Run()
	_ = shared.Close()
	os.Exit(code)
}

func TestMissingPythonIsUnavailable(t *testing.T) {
	t.Setenv(bridge.PythonEnv, "/nonexistent/python3")
	b := newProbe(t)
	ctx := bridgetest.Context(t, callTimeout)
	d, err := b.Describe(ctx)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	const reason = "python3 not found ($FLASHCORE_PYTHON or python3)"
	if d.Available || !strings.HasPrefix(d.UnavailableReason, reason) || d.Name != "probe" {
		t.Errorf("Describe = %+v, want unavailable with a reason starting %q", d, reason)
	}
	if _, err := b.Prepare(ctx, sdk.PrepareRequest{CaseID: "c", Variant: "math"}); err == nil || !strings.Contains(err.Error(), reason) {
		t.Errorf("Prepare error = %v, want it to carry %q", err, reason)
	}
}

func TestPythonWithoutTorchIsUnavailable(t *testing.T) {
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(bridge.Interpreter(), "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("cannot make a venv with %s: %v\n%s", bridge.Interpreter(), err, out)
	}
	t.Setenv(bridge.PythonEnv, filepath.Join(venv, "bin", "python"))
	d, err := newProbe(t).Describe(bridgetest.Context(t, callTimeout))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	const reason = "python3 has no torch: No module named 'torch'"
	if d.Available || !strings.HasPrefix(d.UnavailableReason, reason) {
		t.Errorf("Describe = %+v, want unavailable with a reason starting %q", d, reason)
	}
}

func TestLifecycleThroughAWorker(t *testing.T) {
	bridgetest.RequireTorch(t)
	t.Setenv("TMPDIR", t.TempDir()) // to see the scripts directory come and go
	b := newProbe(t)
	ctx := bridgetest.Context(t, callTimeout)

	d, err := b.Describe(ctx)
	if err != nil || !d.Available {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	if d.Name != "probe" || d.Version != "probe-1" || d.Device.Kind == "" || len(d.Variants) != 10 {
		t.Errorf("Describe = %+v", d)
	}

	c := bridgetest.NewCase(t, "c1", "math", bridgetest.Shape(2, 4, 2, 13, 21, 16, true, sdk.FP32), 1)
	prepared, err := b.Prepare(ctx, c.Request)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if prepared.LoadedSHA256 != c.Request.InputSHA256 || prepared.Facts["probe"] != "yes" {
		t.Errorf("Prepare = %+v, want the input hash %s", prepared, c.Request.InputSHA256)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: "c1"}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	c.CheckOutput(t)

	m := bridgetest.QuickMeasurement()
	samples, err := b.Run(ctx, sdk.RunRequest{CaseID: "c1", Measurement: m})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	bridgetest.CheckSamples(t, samples, m)
	if err := b.Release(ctx, sdk.ReleaseRequest{CaseID: "c1"}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: "c1"}); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Errorf("Fetch after Release = %v, want a not-prepared error", err)
	}

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "flashcore-*")); len(left) != 0 {
		t.Errorf("Close left %v behind", left)
	}
}

func TestFindingsAndErrors(t *testing.T) {
	bridgetest.RequireTorch(t)
	b := shared
	ctx := bridgetest.Context(t, callTimeout)
	prepare := func(variant string, dtype sdk.DType) (sdk.Prepared, error) {
		c := bridgetest.NewCase(t, "c-"+variant, variant, bridgetest.Shape(1, 2, 2, 8, 8, 16, false, dtype), 2)
		return b.Prepare(ctx, c.Request)
	}
	tests := []struct {
		variant   string
		dtype     sdk.DType
		wantSkip  string // summary of an Unsupported diagnostic
		wantError string // prefix of the error
	}{
		{variant: "refuse", dtype: sdk.FP32, wantSkip: "probe refuses this case"},
		{variant: "math", dtype: sdk.BF16, wantSkip: "math: dtype bf16 not supported (supports fp32, fp16)"},
		{variant: "oom", dtype: sdk.FP32, wantError: "out of memory: OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 GiB"},
		{variant: "raise", dtype: sdk.FP32, wantError: "ValueError: probe raised (probe_backend.py:"},
		{variant: "nonesuch", dtype: sdk.FP32, wantError: "ValueError: unknown variant 'nonesuch'"},
	}
	for _, tc := range tests {
		t.Run(tc.variant+"/"+string(tc.dtype), func(t *testing.T) {
			prepared, err := prepare(tc.variant, tc.dtype)
			if tc.wantError != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantError) {
					t.Errorf("Prepare error = %v, want it to start %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			want := []sdk.Diagnostic{{Severity: sdk.Unsupported, Summary: tc.wantSkip}}
			if len(prepared.Diagnostics) != 1 || prepared.Diagnostics[0].Severity != want[0].Severity ||
				prepared.Diagnostics[0].Summary != want[0].Summary {
				t.Errorf("Prepare diagnostics = %+v, want %+v", prepared.Diagnostics, want)
			}
		})
	}
}

func TestUnwrittenOutputStaysPoisoned(t *testing.T) {
	bridgetest.RequireTorch(t)
	b := shared
	ctx := bridgetest.Context(t, callTimeout)
	c := bridgetest.NewCase(t, "c", "untouched", bridgetest.Shape(1, 2, 2, 8, 8, 16, false, sdk.FP16), 3)
	if _, err := b.Prepare(ctx, c.Request); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: "c"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(c.Request.Files.Output)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("\xff", 8*2*16*2); string(raw) != want {
		t.Errorf("output of a kernel that writes nothing is not all poison bytes")
	}
}

func TestCrashCarriesTracebackAndNextPrepareRespawns(t *testing.T) {
	bridgetest.RequireTorch(t)
	b := shared
	ctx := bridgetest.Context(t, callTimeout)
	shape := bridgetest.Shape(1, 2, 2, 8, 8, 16, false, sdk.FP32)
	first := bridgetest.NewCase(t, "first", "math", shape, 4)
	if _, err := b.Prepare(ctx, first.Request); err != nil {
		t.Fatal(err)
	}

	_, err := b.Prepare(ctx, bridgetest.NewCase(t, "boom", "crash", shape, 4).Request)
	if err == nil || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "RuntimeError: probe crash marker 4242") {
		t.Fatalf("Prepare of a crashing case = %v, want the exit status and the traceback's tail", err)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: "first"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Fetch after the crash = %v, want a not-running error", err)
	}

	again := bridgetest.NewCase(t, "again", "math", shape, 5)
	if _, err := b.Prepare(ctx, again.Request); err != nil {
		t.Fatalf("Prepare after the crash: %v", err)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: "again"}); err != nil {
		t.Fatal(err)
	}
	again.CheckOutput(t)
}

func TestEndedContextKillsTheWorker(t *testing.T) {
	bridgetest.RequireTorch(t)
	b := shared
	shape := bridgetest.Shape(1, 2, 2, 8, 8, 16, false, sdk.FP32)
	if _, err := b.Describe(bridgetest.Context(t, callTimeout)); err != nil { // start-up outside the deadline
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.Prepare(ctx, bridgetest.NewCase(t, "hang", "hang", shape, 6).Request)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Prepare of a hanging case = %v, want context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Prepare returned %v after its deadline", waited)
	}

	c := bridgetest.NewCase(t, "after", "math", shape, 6)
	if _, err := b.Prepare(bridgetest.Context(t, callTimeout), c.Request); err != nil {
		t.Fatalf("Prepare after the kill: %v", err)
	}
}

// rmsnormParams are an rmsnorm case's axis values.
func rmsnormParams(rows, cols int, dtype sdk.DType) op.Params {
	return op.Params{"rows": strconv.Itoa(rows), "cols": strconv.Itoa(cols), "dtype": string(dtype)}
}

// TestRMSNormThroughAWorker: an op other than attention, served by the
// worker's generic path: its named inputs loaded and hashed, its output
// written where Fetch and Run are told, and both held to the op's check.
func TestRMSNormThroughAWorker(t *testing.T) {
	bridgetest.RequireTorch(t)
	m := bridgetest.QuickMeasurement()
	for i, dtype := range []sdk.DType{sdk.FP32, sdk.FP16} {
		c := bridgetest.NewOpCase(t, "rmsnorm", rmsnorm.Name, rmsnormParams(37, 300, dtype), uint64(i))
		out := bridgetest.RunOpCase(t, shared, c, &m)
		if out.Skip != nil || out.Prepared.Facts["probe"] != "yes" {
			t.Errorf("%s: Prepare = %+v", c.Case.ID, out.Prepared)
		}
	}
}

// TestAnUnwrittenOpOutputStaysPoisoned: the worker poisons an op's output
// buffer before the checked run, as attention's.
func TestAnUnwrittenOpOutputStaysPoisoned(t *testing.T) {
	bridgetest.RequireTorch(t)
	ctx := bridgetest.Context(t, callTimeout)
	c := bridgetest.NewOpCase(t, "rmsnorm-untouched", rmsnorm.Name, rmsnormParams(3, 8, sdk.FP16), 1)
	if _, err := shared.Prepare(ctx, c.Request); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Fetch(ctx, sdk.FetchRequest{CaseID: c.Request.CaseID}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(c.Request.Outputs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("\xff", 3*8*2); string(raw) != want {
		t.Errorf("output of an op that writes nothing is not all poison bytes")
	}
}

// TestTheBridgeRefusesBeforeTheWorkerReads: a request outside the
// variant's capabilities is answered in Go with the host's reason, before
// the worker reads a byte (its input files here do not exist).
func TestTheBridgeRefusesBeforeTheWorkerReads(t *testing.T) {
	bridgetest.RequireTorch(t)
	ctx := bridgetest.Context(t, callTimeout)
	d, err := shared.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.bin")
	attention := func(variant string, dtype sdk.DType) sdk.PrepareRequest {
		req := bridgetest.NewCase(t, "refused", variant, bridgetest.Shape(1, 2, 2, 8, 8, 16, false, dtype), 7).Request
		req.Files.Q, req.Files.K, req.Files.V = missing, missing, missing
		return req
	}
	norm := func(variant string, dtype sdk.DType) sdk.PrepareRequest {
		req := bridgetest.NewOpCase(t, variant, rmsnorm.Name, rmsnormParams(4, 8, dtype), 7).Request
		for i := range req.Inputs {
			req.Inputs[i].Path = missing
		}
		return req
	}
	tests := []struct {
		name string
		req  sdk.PrepareRequest
		want string
	}{
		{"dtype", attention("math", sdk.BF16), "math: dtype bf16 not supported (supports fp32, fp16)"},
		{"rmsnorm dtype", norm("rmsnorm", sdk.BF16), "rmsnorm: dtype bf16 not supported (supports fp32, fp16)"},
		{"rmsnorm on attention", norm("math", sdk.FP32), "math: op rmsnorm not supported"},
		{"attention on rmsnorm", attention("rmsnorm", sdk.FP32), "rmsnorm: op attention not supported"},
	}
	if d.Device.Kind != "gpu" {
		tests = append(tests, struct {
			name string
			req  sdk.PrepareRequest
			want string
		}{"needs a GPU", attention("gpu", sdk.FP16), "gpu: needs a CUDA GPU; this machine has none"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prepared, err := shared.Prepare(ctx, tc.req)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			want := sdk.Diagnostic{Severity: sdk.Unsupported, Summary: tc.want}
			if len(prepared.Diagnostics) != 1 || prepared.Diagnostics[0] != want || prepared.LoadedSHA256 != "" {
				t.Errorf("Prepare = %+v, want only %+v", prepared, want)
			}
		})
	}
}
