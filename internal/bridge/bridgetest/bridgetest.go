// Package bridgetest holds what the tests of the Python bridges share: the
// interpreter check that skips without torch, small attention cases written
// as the host writes them, a plain fp64 reference to check outputs against,
// and the build-and-dispense of a plugin binary through go-plugin.
//
// Where to start: RequireTorch, then NewCase and CheckOutput.
package bridgetest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/buildtest"
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
	// Q, K and V are the values as stored (rounded to the dtype).
	Q, K, V []float64
}

// NewCase draws Q, K and V from a standard normal with seed, writes them
// into a temporary directory and returns the request that names them, with
// the input hash the host would send.
func NewCase(t testing.TB, caseID, variant string, shape sdk.Shape, seed uint64) Case {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 17))
	draw := func(n int) []float64 {
		values := make([]float64, n)
		for i := range values {
			values[i] = inputs.Round(shape.DType, rng.NormFloat64())
		}
		return values
	}
	c := Case{Q: draw(shape.QElements()), K: draw(shape.KVElements()), V: draw(shape.KVElements())}
	dir := t.TempDir()
	files := sdk.Tensors{Q: filepath.Join(dir, "q.bin"), K: filepath.Join(dir, "k.bin"),
		V: filepath.Join(dir, "v.bin"), Output: filepath.Join(dir, "out.bin")}
	raw := map[string][]byte{}
	for path, values := range map[string][]float64{files.Q: c.Q, files.K: c.K, files.V: c.V} {
		raw[path] = inputs.Encode(shape.DType, values)
		if err := os.WriteFile(path, raw[path], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.Request = sdk.PrepareRequest{CaseID: caseID, Variant: variant, Shape: shape, Files: files,
		InputSHA256: inputs.HashInputs(raw[files.Q], raw[files.K], raw[files.V])}
	return c
}

// Reference is softmax(Q·Kᵀ/√D)·V in float64 for query row i of head h of
// batch b, one whole row of scores at a time, with top-left causal masking
// and grouped-query heads.
func (c Case) Reference(b, h, i int) []float64 {
	s := c.Request.Shape
	d := s.HeadDim
	q := ((b*s.Heads+h)*s.SeqQ + i) * d
	kv := ((b*s.KVHeads + h/(s.Heads/s.KVHeads)) * s.SeqK) * d
	visible := s.SeqK
	if s.Causal {
		visible = min(i+1, s.SeqK)
	}
	scores := make([]float64, visible)
	largest := math.Inf(-1)
	for j := range visible {
		var dot float64
		for x := range d {
			dot += c.Q[q+x] * c.K[kv+j*d+x]
		}
		scores[j] = dot * s.Scale()
		largest = max(largest, scores[j])
	}
	var sum float64
	for j := range scores {
		scores[j] = math.Exp(scores[j] - largest)
		sum += scores[j]
	}
	out := make([]float64, d)
	for j, p := range scores {
		for x := range d {
			out[x] += p / sum * c.V[kv+j*d+x]
		}
	}
	return out
}

// Tolerance is the largest absolute error allowed for outputs in dtype:
// a few units in the last place of values of magnitude about 1.
func Tolerance(dtype sdk.DType) float64 {
	switch dtype {
	case sdk.FP16:
		return 1e-2
	case sdk.BF16:
		return 4e-2
	}
	return 1e-4
}

// checkedRows bounds how many query rows CheckOutput compares with the
// reference: every row of a small case, an even spread of a large one.
const checkedRows = 512

// CheckOutput reads the output file the backend wrote, checks that no
// element is NaN (poison the backend left unwritten decodes as NaN) and
// compares rows with the reference: all of them, or checkedRows spread
// over a large case.
func (c Case) CheckOutput(t testing.TB) {
	t.Helper()
	s := c.Request.Shape
	raw, err := os.ReadFile(c.Request.Files.Output)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	if want := s.QElements() * s.DType.Size(); len(raw) != want {
		t.Fatalf("output file has %d bytes, want %d", len(raw), want)
	}
	got := inputs.Decode(s.DType, raw)
	for i, x := range got {
		if math.IsNaN(x) {
			t.Fatalf("%s: output element %d is NaN (unwritten?)", s, i)
		}
	}
	rows := s.Batch * s.Heads * s.SeqQ
	step := max(rows/checkedRows, 1)
	worst, at, want := 0.0, 0, 0.0
	for row := 0; row < rows; row += step {
		reference := c.Reference(row/(s.Heads*s.SeqQ), row/s.SeqQ%s.Heads, row%s.SeqQ)
		for x, r := range reference {
			if diff := math.Abs(got[row*s.HeadDim+x] - r); diff > worst {
				worst, at, want = diff, row*s.HeadDim+x, r
			}
		}
	}
	if worst > Tolerance(s.DType) {
		t.Errorf("%s: output element %d = %g, want %g (error %.3g > %.3g)", s, at, got[at], want, worst, Tolerance(s.DType))
	}
}

// Fits reports whether caps declare shape runnable (on a device that has
// what caps need).
func Fits(caps sdk.Capabilities, s sdk.Shape) bool {
	switch {
	case !slices.Contains(caps.DTypes, s.DType),
		len(caps.HeadDims) > 0 && !slices.Contains(caps.HeadDims, s.HeadDim),
		s.Causal && !caps.Causal, !s.Causal && !caps.NonCausal,
		s.KVHeads != s.Heads && !caps.GroupedQueryHeads,
		s.SeqQ != s.SeqK && !caps.UnequalSeqLens,
		caps.MaxSeqLen > 0 && max(s.SeqQ, s.SeqK) > caps.MaxSeqLen,
		caps.MaxElements > 0 && max(s.QElements(), s.KVElements()) > caps.MaxElements:
		return false
	}
	return true
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
	return buildtest.Plugin(t, name, "plugins/"+name)
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
// Release. A refusal stops it after Prepare, reported in Outcome.Skip.
func RunCase(t testing.TB, backend sdk.Backend, c Case, m *sdk.Measurement) Outcome {
	t.Helper()
	ctx := Context(t, 5*time.Minute)
	var out Outcome
	var err error
	if out.Prepared, err = backend.Prepare(ctx, c.Request); err != nil {
		t.Fatalf("Prepare %s: %v", c.Request.Shape, err)
	}
	for _, d := range out.Prepared.Diagnostics {
		if d.Severity == sdk.Unsupported {
			out.Skip = &d
			return out
		}
	}
	if out.Prepared.LoadedSHA256 != c.Request.InputSHA256 {
		t.Errorf("Prepare: loaded hash %s, the host wrote %s", out.Prepared.LoadedSHA256, c.Request.InputSHA256)
	}
	defer func() {
		if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: c.Request.CaseID}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: c.Request.CaseID}); err != nil {
		t.Fatalf("Fetch %s: %v", c.Request.Shape, err)
	}
	c.CheckOutput(t)
	if m == nil {
		return out
	}
	if out.Samples, err = backend.Run(ctx, sdk.RunRequest{CaseID: c.Request.CaseID, Measurement: *m}); err != nil {
		t.Fatalf("Run %s: %v", c.Request.Shape, err)
	}
	CheckSamples(t, out.Samples, *m)
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

// Median is the median of samples (0 for none).
func Median(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := make([]float64, len(samples))
	for i, s := range samples {
		sorted[i] = float64(s)
	}
	slices.Sort(sorted)
	return time.Duration(sdk.MedianSorted(sorted))
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
		us(Median(s.KernelTimes)), len(s.KernelTimes), sdk.RelativeNoise(s.KernelTimes), s.Method,
		us(Median(s.CrossCheckTimes)), len(s.CrossCheckTimes), us(Median(s.CallTimes)), s.SMClockMHz,
		strings.Join(facts, "; "))
}
