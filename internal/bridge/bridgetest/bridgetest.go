// Package bridgetest holds what the tests of the Python bridges share: the
// interpreter check that skips without torch, small attention cases (and
// cases of any other op) written as the host writes them, and the
// build-and-dispense of a plugin binary through go-plugin. Outputs are
// checked by the conformance kit's CheckOutput, or by the op's own check
// with the default suite's tolerances; there is no reference or tolerance
// here.
//
// Where to start: RequireTorch, then NewCase and CheckOutput (attention)
// or NewOpCase and RunOpCase (any op).
package bridgetest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var (
	torchOnce  sync.Once
	torchError string
)

// RequireTorch skips t unless the bridge's interpreter ($FLASHCORE_PYTHON,
// else python3) can import torch.
func RequireTorch(t testing.TB) {
	t.Helper()
	torchOnce.Do(func() {
		out, err := exec.Command(bridge.Interpreter(), "-c", "import torch").CombinedOutput()
		if err != nil {
			torchError = strings.TrimSpace(lastLine(string(out)) + " " + err.Error())
		}
	})
	if torchError != "" {
		t.Skipf("the bridge's python (%s) cannot import torch (%s): set %s to a Python with torch (make setup makes .venv)",
			bridge.Interpreter(), torchError, bridge.PythonEnv)
	}
}

func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return lines[len(lines)-1]
}

// Shape is a short way to write an sdk.Shape in test tables.
func Shape(batch, heads, kvHeads, seqQ, seqK, headDim int, causal bool, dtype sdk.DType) sdk.Shape {
	return sdk.Shape{Batch: batch, Heads: heads, KVHeads: kvHeads, SeqQ: seqQ, SeqK: seqK,
		HeadDim: headDim, Causal: causal, DType: dtype}
}

// Case is one attention problem written to files as the host writes them.
type Case struct {
	Request sdk.PrepareRequest
	// Tensors are the inputs as stored, from core/inputs as flashcore run
	// makes them.
	Tensors *inputs.Tensors
}

// NewCase generates the inputs of shape (normal values, the suite case's
// ID and seed keying them, as flashcore run does), writes them into a
// temporary directory and returns the request that names them, with the
// input hash the host would send.
func NewCase(t testing.TB, caseID, variant string, shape sdk.Shape, seed uint64) Case {
	t.Helper()
	tensors := inputs.Generate(seed, attention.NewCase(shape, op.Normal))
	files, err := inputs.WriteFiles(t.TempDir(), tensors)
	if err != nil {
		t.Fatal(err)
	}
	return Case{Tensors: tensors, Request: sdk.PrepareRequest{CaseID: caseID, Variant: variant, Shape: shape,
		Files: files, InputSHA256: tensors.SHA256}}
}

// CheckOutput reads the output file the backend wrote and checks it with
// the conformance kit's CheckOutput: core/check against the fp64
// reference, with the default suite's tolerances.
func (c Case) CheckOutput(t testing.TB) {
	t.Helper()
	raw, err := os.ReadFile(c.Request.Files.Output)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	if r := conformance.CheckOutput(c.Tensors, raw); r.Verdict != check.Pass {
		t.Errorf("%s: output %s: %s (max abs err %.3g, rel L2 %.3g)", c.Request.Shape, r.Verdict, r.Reason, r.MaxAbsErr, r.RelL2Err)
	}
}

// QuickMeasurement is a short measurement for tests on a CPU.
func QuickMeasurement() sdk.Measurement {
	return sdk.Measurement{WarmupRuns: 1, MinSamples: 3, MaxSamples: 5, TargetNoise: 0.5,
		TimeCap: 5 * time.Second, L2: sdk.L2Hot, CallSamples: 2}
}

// Plugin returns the binary of the plugin named name (e.g. "triton"):
// $FLASHCORE_BIN/flashcore-backend-<name> when FLASHCORE_BIN is set (make
// test builds bin/ first; a machine without Go gets prebuilt binaries), else
// a fresh `go build` of ./plugins/<name> in a temporary directory.
func Plugin(t testing.TB, name string) string {
	t.Helper()
	return buildtest.Plugin(t, name, buildtest.PluginMain(name))
}

// StartPlugin runs binary (with args) as a go-plugin plugin, exactly as the host does,
// and returns its Backend. The plugin's stderr is logged if t fails.
func StartPlugin(t testing.TB, binary string, args ...string) sdk.Backend {
	t.Helper()
	stderr := LogOnFailure(t, "plugin stderr")
	client := plugin.NewClient(sdk.ClientConfig(exec.Command(binary, args...), stderr, hclog.NewNullLogger()))
	t.Cleanup(client.Kill) // runs before the logging above
	backend, err := sdk.Dispense(client)
	if err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	return backend
}

// LogOnFailure returns a writer whose text is logged, under title, when t
// fails: a worker's or plugin's output without noise in passing tests.
func LogOnFailure(t testing.TB, title string) io.Writer {
	buffer := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s:\n%s", title, buffer.String())
		}
	})
	return buffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Context is a context for one bridge call in a test.
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// Outcome is what RunCase saw.
type Outcome struct {
	Skip     *sdk.Diagnostic // the Unsupported diagnostic, when the backend refused
	Prepared sdk.Prepared
	Samples  sdk.Samples // zero unless a measurement was given
}

// RunCase takes c through the lifecycle the host drives: Prepare (the
// loaded hash must equal the input hash), Fetch (the output must match the
// reference), Run under m when m is not nil (the samples must obey m), and
// Release. A refusal stops it after Prepare, reported in Outcome.Skip. The
// requests are those of version 1 of the protocol: Shape and Files, and a
// Run that names no output file.
func RunCase(t testing.TB, backend sdk.Backend, c Case, m *sdk.Measurement) Outcome {
	t.Helper()
	return runLifecycle(t, backend, lifecycle{name: c.Request.Shape.String(), request: c.Request, checkFetched: c.CheckOutput}, m)
}

// RunOpCase takes c through the lifecycle as RunCase does, for any op:
// every output must pass the op's check, and under m Run writes the
// outputs of its last timed call to c.Timed, which must pass it too.
func RunOpCase(t testing.TB, backend sdk.Backend, c OpCase, m *sdk.Measurement) Outcome {
	t.Helper()
	return runLifecycle(t, backend, lifecycle{
		name:         c.Case.ID,
		request:      c.Request,
		checkFetched: func(t testing.TB) { c.CheckOutputs(t, c.Request.Outputs) },
		timed:        c.Timed,
		checkTimed:   func(t testing.TB) { c.CheckOutputs(t, c.Timed) },
	}, m)
}

// lifecycle is what RunCase and RunOpCase tell runLifecycle: the case's
// name in failures, its request, the check of what Fetch wrote, and the
// files Run writes with their check (none for a version 1 request).
type lifecycle struct {
	name         string
	request      sdk.PrepareRequest
	checkFetched func(testing.TB)
	timed        []sdk.TensorFile
	checkTimed   func(testing.TB)
}

func runLifecycle(t testing.TB, backend sdk.Backend, c lifecycle, m *sdk.Measurement) Outcome {
	t.Helper()
	ctx := Context(t, 5*time.Minute)
	var out Outcome
	var err error
	if out.Prepared, err = backend.Prepare(ctx, c.request); err != nil {
		t.Fatalf("Prepare %s: %v", c.name, err)
	}
	for _, d := range out.Prepared.Diagnostics {
		if d.Severity == sdk.Unsupported {
			out.Skip = &d
			return out
		}
	}
	if out.Prepared.LoadedSHA256 != c.request.InputSHA256 {
		t.Errorf("Prepare: loaded hash %s, the host wrote %s", out.Prepared.LoadedSHA256, c.request.InputSHA256)
	}
	defer func() {
		if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: c.request.CaseID}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: c.request.CaseID}); err != nil {
		t.Fatalf("Fetch %s: %v", c.name, err)
	}
	c.checkFetched(t)
	if m == nil {
		return out
	}
	run := sdk.RunRequest{CaseID: c.request.CaseID, Measurement: *m}
	if len(c.timed) > 0 {
		run.Output, run.Outputs = c.timed[0].Path, c.timed
	}
	if out.Samples, err = backend.Run(ctx, run); err != nil {
		t.Fatalf("Run %s: %v", c.name, err)
	}
	CheckSamples(t, out.Samples, *m)
	if c.checkTimed != nil {
		c.checkTimed(t)
	}
	return out
}

// CheckSamples checks the sample counts m allows and that every time is
// positive.
func CheckSamples(t testing.TB, s sdk.Samples, m sdk.Measurement) {
	t.Helper()
	minSamples := max(m.MinSamples, 1)
	if n := len(s.KernelTimes); n < minSamples || n > max(m.MaxSamples, minSamples) || len(s.CallTimes) != m.CallSamples {
		t.Errorf("Run gave %d kernel and %d call samples, want %d..%d and %d",
			n, len(s.CallTimes), minSamples, max(m.MaxSamples, minSamples), m.CallSamples)
	}
	for _, d := range append(append([]time.Duration{}, s.KernelTimes...), s.CallTimes...) {
		if d <= 0 {
			t.Errorf("sample %v is not positive", d)
		}
	}
	if s.Method == "" {
		t.Error("Run gave no method")
	}
}

// Figures is one line about a Run for the test log: medians of the kernel,
// cross-check and call times, the clock and the facts.
func Figures(s sdk.Samples) string {
	us := func(d time.Duration) string { return fmt.Sprintf("%.2f µs", float64(d)/1e3) }
	keys := slices.Sorted(maps.Keys(s.Facts))
	facts := make([]string, len(keys))
	for i, k := range keys {
		facts[i] = k + "=" + s.Facts[k]
	}
	return fmt.Sprintf("kernel %s (n=%d, noise %.4f, %s) | cross-check %s (n=%d) | call %s | SM %.0f MHz | %s",
		us(sdk.MedianDuration(s.KernelTimes)), len(s.KernelTimes), sdk.RelativeNoise(s.KernelTimes), s.Method,
		us(sdk.MedianDuration(s.CrossCheckTimes)), len(s.CrossCheckTimes), us(sdk.MedianDuration(s.CallTimes)), s.SMClockMHz,
		strings.Join(facts, "; "))
}

// EventLatency is the device's own latency between a CUDA event and the
// kernel after it, which event timing includes and CUPTI does not: on an
// H100 with torch 2.11, events around a 1.1 µs kernel (x.add_(1)) read
// 3.3 µs, and around SDPA's 8.1 µs of device work 10.5 µs.
const EventLatency = 3 * time.Microsecond

// CheckCUPTI fails a Run on a GPU whose kernel time did not come from
// CUPTI, with the reason the worker gave for falling back.
func CheckCUPTI(t testing.TB, s sdk.Samples) bool {
	t.Helper()
	if s.Method != "cupti" {
		t.Errorf("kernel time by %q, want cupti; cupti_fallback: %q", s.Method, s.Facts["cupti_fallback"])
		return false
	}
	return true
}

// CheckEventsAboveCUPTI checks a hot Run on a GPU at a small shape: the
// events+sleep cross-check lies within 5% below CUPTI's kernel time and
// within 5% or EventLatency above it.
func CheckEventsAboveCUPTI(t testing.TB, s sdk.Samples) {
	t.Helper()
	if !CheckCUPTI(t, s) {
		return
	}
	cupti, events := sdk.MedianDuration(s.KernelTimes), sdk.MedianDuration(s.CrossCheckTimes)
	slack := max(time.Duration(0.05*float64(cupti)), EventLatency)
	if events == 0 || events < cupti-time.Duration(0.05*float64(cupti)) || events > cupti+slack {
		t.Errorf("events+sleep %v vs CUPTI kernel time %v: outside -5%%..+%v", events, cupti, slack)
	}
}

// OpCase is one case of any op, its inputs written to files as the host
// writes them.
type OpCase struct {
	Case   op.Case
	Inputs *op.Inputs
	// Request names the input files and the files Fetch writes.
	Request sdk.PrepareRequest
	// Timed are the files Run writes the outputs of its last timed call to.
	Timed []sdk.TensorFile
}

// NewOpCase generates the inputs of op opName at params (normal values,
// keyed by the case's ID and seed, as flashcore run draws them), writes
// them into a temporary directory and returns the request the host would
// send variant, with the input hash.
func NewOpCase(t testing.TB, variant, opName string, params op.Params, seed uint64) OpCase {
	t.Helper()
	o, err := ops.Lookup(opName)
	if err != nil {
		t.Fatal(err)
	}
	c := op.Case{ID: o.CaseID(params, op.Normal), Op: opName, Params: params, Distribution: op.Normal}
	in := o.Generate(seed, c)
	dir := t.TempDir()
	files := ops.InputFiles(in, dir, "")
	for i, f := range files {
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return OpCase{Case: c, Inputs: in,
		Request: ops.PrepareRequest(c, variant, nil, files, ops.OutputFiles(c, dir, "out"), in.SHA256),
		Timed:   ops.OutputFiles(c, dir, "timed-out")}
}

// CheckOutputs reads the output files a backend wrote (c.Request.Outputs
// or c.Timed) and holds them to the op's reference with the default
// suite's check settings and tolerances, as flashcore run does.
func (c OpCase) CheckOutputs(t testing.TB, files []sdk.TensorFile) {
	t.Helper()
	outputs := make([][]byte, len(files))
	for i, f := range files {
		raw, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatalf("read output %s: %v", f.Name, err)
		}
		outputs[i] = raw
	}
	d := suite.Default()
	for i, r := range ops.Of(c.Case).Check(c.Case, c.Inputs, outputs, d.Check, d.TolerancesOf(c.Case)) {
		if r.Verdict != check.Pass {
			t.Errorf("%s: output %s: %s: %s (max abs err %.3g, rel L2 %.3g)", c.Case.ID, files[i].Name, r.Verdict, r.Reason, r.MaxAbsErr, r.RelL2Err)
		}
	}
}

// CheckUnavailableNamesInstall starts the plugin binary of an optional
// third-party library (flash-attn-4, flashinfer) and, where the library is
// not installed, checks that it describes itself unavailable with the
// command that installs it, `make setup EXTRAS=extra`, as flashcore list
// shows it. Where the library is installed it skips, saying so.
func CheckUnavailableNamesInstall(t *testing.T, plugin, extra string) {
	t.Helper()
	RequireTorch(t)
	backend := StartPlugin(t, Plugin(t, plugin))
	d, err := backend.Describe(Context(t, 2*time.Minute))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if d.Available {
		t.Skipf("%s is installed here (version %s)", plugin, d.Version)
	}
	for _, want := range []string{"is not installed for ", "`make setup EXTRAS=" + extra + "`", "scripts/extras.py"} {
		if !strings.Contains(d.UnavailableReason, want) {
			t.Errorf("unavailable reason %q lacks %q", d.UnavailableReason, want)
		}
	}
}
