package cpureference

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/flashcore/bench/sdk"
)

const (
	backendName = "cpu-reference"
	variantName = "cpu-reference"
	version     = "1.0.0"
	// maxSeqLen bounds the work: every pass costs O(SeqQ·SeqK) per
	// head, which at 2048 is already seconds per case on a small CPU.
	maxSeqLen = 2048
	// decodeMaxElements bounds decode's page pool, per cache: a call
	// reads all of it at most, which at 2^24 elements is about a second
	// on a small CPU.
	decodeMaxElements = 1 << 24
	// varlenMaxElements bounds varlen's packed tensors: 2^22 elements is
	// 16k rows of 8 heads of 32.
	varlenMaxElements = 1 << 22
)

// Backend is the cpu-reference backend: FlashAttention's tiled forward pass
// and its backward in pure Go, in float32. It needs no GPU, so it runs
// everywhere the host runs, and it is the template a new backend starts
// from.
type Backend struct {
	mu    sync.Mutex
	cases map[string]*preparedCase
	// attend is the forward pass that Fetch and Run execute, and backprop
	// the backward pass. They are always attention and backward outside
	// tests; a test swaps them to show that Fetch poisons every output
	// before every run.
	attend   func(problem)
	backprop func(backwardProblem)
}

var _ sdk.Backend = (*Backend)(nil)

// New returns a backend with nothing loaded. It has no side effects, so the
// host may create it just to call Describe.
func New() sdk.Backend { return newBackend() }

func newBackend() *Backend {
	return &Backend{cases: map[string]*preparedCase{}, attend: attention, backprop: backward}
}

// preparedCase is what Prepare loaded for one case.
type preparedCase struct {
	run     func()    // one call of the op: reads the inputs, writes the outputs
	outputs []*output // in the op's order
}

// output is one output tensor of a case.
type output struct {
	values  []float32 // what run writes
	dtype   sdk.DType // the element type of the file
	encoded []byte    // values encoded in dtype, reused by every write
	file    string    // where Fetch writes it
}

func newOutput(values []float32, dtype sdk.DType, file string) *output {
	return &output{values: values, dtype: dtype, encoded: make([]byte, len(values)*dtype.Size()), file: file}
}

// poison fills every output with the poisoned value.
func (c *preparedCase) poison() {
	for _, out := range c.outputs {
		for i := range out.values {
			out.values[i] = poisoned
		}
	}
}

// Describe says who the backend is. It only reads the build information
// and /proc/cpuinfo: cheap, and it cannot fail.
func (b *Backend) Describe(ctx context.Context) (sdk.Description, error) {
	info, ok := debug.ReadBuildInfo()
	return sdk.Description{
		Name:      backendName,
		Version:   version,
		Build:     buildString(info, ok),
		Available: true,
		Device:    cpuDevice(),
		Variants:  []sdk.Variant{cpuReferenceVariant()},
	}, nil
}

func cpuReferenceVariant() sdk.Variant {
	return sdk.Variant{
		Name: variantName,
		Description: fmt.Sprintf("tiled online-softmax attention in pure Go, forward and backward, float32 accumulation; "+
			"sequences up to %d because the work grows as SeqQ·SeqK (O(S²)) on a CPU; rmsnorm; decode over a paged KV cache; and varlen over packed sequences", maxSeqLen),
		Ops: []string{"attention", rmsnormOp, decodeOp, varlenOp},
		Capabilities: sdk.Capabilities{
			DTypes:            []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
			HeadDims:          nil, // any head dim
			Causal:            true,
			NonCausal:         true,
			GroupedQueryHeads: true,
			UnequalSeqLens:    true,
			MaxSeqLen:         maxSeqLen,
			NeedsGPU:          false,
			Modes:             []sdk.Mode{sdk.Forward, sdk.Backward, sdk.ForwardBackward},
			// In the forward: masks.go, row by row over each row's keys.
			Masks: []string{sdk.MaskBottomRight, sdk.MaskWindow, sdk.MaskSoftcap},
		},
		// rmsnorm's cost grows with rows·cols alone: no sequence limit.
		OpCapabilities: map[string]sdk.Capabilities{
			rmsnormOp: {DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}},
			// decode's cost grows with the context it reads, linearly: a
			// bound on the pool keeps a CPU row to seconds.
			decodeOp: {DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}, GroupedQueryHeads: true, Causal: true, NonCausal: true,
				Masks: []string{sdk.MaskWindow, sdk.MaskSoftcap}, MaxElements: decodeMaxElements},
			// varlen's cost grows as each sequence's length squared, like
			// attention's: the same bound on the longest sequence, and one
			// on the packed batch.
			varlenOp: {DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}, GroupedQueryHeads: true, Causal: true, NonCausal: true,
				Masks: []string{sdk.MaskWindow, sdk.MaskSoftcap}, MaxSeqLen: maxSeqLen, MaxElements: varlenMaxElements},
		},
		Tunables: tunables,
	}
}

// buildString names the Go toolchain and the VCS revision the binary was
// built from, so that a result can be traced to the code that produced it.
func buildString(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown build"
	}
	build := info.GoVersion
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if revision := settings["vcs.revision"]; revision != "" {
		build += " " + revision[:min(12, len(revision))]
		if settings["vcs.modified"] == "true" {
			build += "+modified"
		}
	} else if info.Main.Version != "" && info.Main.Version != "(devel)" {
		build += " " + info.Main.Version // installed with go install module@version
	}
	return build
}

// Prepare checks that the case is one this backend runs, loads the three
// input files, hashes the bytes it loaded and allocates the output.
// Anything wrong with the case comes back as a diagnostic: the host shows it
// in the case's row and goes on with the next case.
func (b *Backend) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if diagnostics := checkRequest(req); len(diagnostics) > 0 {
		return sdk.Prepared{Diagnostics: diagnostics}, nil
	}
	tiles, _ := tilingOf(req.Op, req.Tunables) // checkRequest refused every bad tunable
	var loaded *preparedCase
	var hash string
	var err error
	var facts map[string]string
	switch req.Op {
	case rmsnormOp:
		loaded, hash, err = loadRMSNorm(req)
	case decodeOp:
		loaded, hash, err = loadDecode(req)
	case varlenOp:
		loaded, hash, err = loadVarlen(req)
	default:
		loaded, hash, err = b.loadAttention(req, tiles)
		facts = tiles.facts()
	}
	if err != nil {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{
			Severity: sdk.Failure, Summary: "cannot load the inputs", Detail: err.Error(),
		}}}, nil
	}
	b.mu.Lock()
	b.cases[req.CaseID] = loaded
	b.mu.Unlock()
	return sdk.Prepared{LoadedSHA256: hash, Facts: facts}, nil
}

// checkRequest returns the reasons this backend will not run the request.
// The host already skips cases outside the declared capabilities; checking
// again here keeps the backend safe when it is driven by anything else.
func checkRequest(req sdk.PrepareRequest) []sdk.Diagnostic {
	var diagnostics []sdk.Diagnostic
	unsupported := func(format string, args ...any) {
		diagnostics = append(diagnostics, sdk.Diagnostic{
			Severity: sdk.Unsupported, Summary: fmt.Sprintf(format, args...)})
	}
	if req.Variant != variantName {
		unsupported("unknown variant %q: %s has only %q", req.Variant, backendName, variantName)
	}
	_, tunableProblems := tilingOf(req.Op, req.Tunables)
	diagnostics = append(diagnostics, tunableProblems...)
	v := cpuReferenceVariant()
	switch req.Op {
	case "", "attention":
		if reason := v.CapabilitiesOf("attention").Unsupported(req.Shape); reason != "" {
			unsupported("%s", reason)
		}
		if denseMaskOf(req.Params).set() && req.Shape.Mode.Or() != sdk.Forward {
			unsupported("masks beyond causal in mode %s not supported (the forward alone takes them)", req.Shape.Mode)
		}
	case rmsnormOp, decodeOp, varlenOp:
		if len(req.Inputs) > 0 {
			if reason := v.CapabilitiesOf(req.Op).UnsupportedDType(req.Inputs[0].DType); reason != "" {
				unsupported("%s", reason)
			}
		}
	default:
		unsupported("op %s not supported", req.Op)
	}
	return diagnostics
}

// loadAttention loads an attention case with the tiling asked for: the
// forward pass, or in the backward modes the backward (backward.go).
func (b *Backend) loadAttention(req sdk.PrepareRequest, tiles tiling) (*preparedCase, string, error) {
	if req.Shape.Mode.Or() != sdk.Forward {
		return b.loadBackward(req, tiles)
	}
	p, hash, err := loadCase(req)
	if err != nil {
		return nil, "", err
	}
	p.tiling = tiles
	if m := denseMaskOf(req.Params); !m.tiled(req.Shape) {
		return &preparedCase{
			run:     func() { maskedAttention(p, m) },
			outputs: []*output{newOutput(p.out, req.Shape.DType, req.Files.Output)},
		}, hash, nil
	}
	return &preparedCase{
		run:     func() { b.attend(p) },
		outputs: []*output{newOutput(p.out, req.Shape.DType, req.Files.Output)},
	}, hash, nil
}

// loadCase reads Q, K and V, hashes their bytes in that order and decodes
// them to float32. The hash is over the bytes as read, before any
// conversion, so it proves which inputs the backend computed on.
func loadCase(req sdk.PrepareRequest) (problem, string, error) {
	s := req.Shape
	hash := sha256.New()
	var tensors [3][]float32
	for i, input := range []struct {
		name, file string
		elements   int
	}{
		{"Q", req.Files.Q, s.QElements()},
		{"K", req.Files.K, s.KVElements()},
		{"V", req.Files.V, s.KVElements()},
	} {
		raw, err := os.ReadFile(input.file)
		if err != nil {
			return problem{}, "", fmt.Errorf("read %s: %w", input.name, err)
		}
		if want := input.elements * s.DType.Size(); len(raw) != want {
			return problem{}, "", fmt.Errorf("%s file %s has %d bytes, want %d for %s", input.name, input.file, len(raw), want, s)
		}
		hash.Write(raw)
		if tensors[i], err = decode(s.DType, raw); err != nil {
			return problem{}, "", fmt.Errorf("%s file %s: %w", input.name, input.file, err)
		}
	}
	loaded := problem{shape: s, q: tensors[0], k: tensors[1], v: tensors[2],
		out: make([]float32, s.QElements())}
	return loaded, hex.EncodeToString(hash.Sum(nil)), nil
}

// poisoned is the float32 whose four bytes are all sdk.PoisonByte. It is a
// NaN, and encode turns it into the all-PoisonByte pattern of every dtype.
var poisoned = math.Float32frombits(0xFFFFFFFF)

// Fetch is the checked run: it poisons the buffers the pass writes, runs
// the pass once, and writes the output files. An element the pass forgot
// to write reaches the file as poison, and the host counts it as unwritten
// instead of checking a stale value from an earlier run.
func (b *Backend) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	c, err := b.lookup(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	c.poison()
	c.run()
	for _, out := range c.outputs {
		encode(out.dtype, out.values, out.encoded)
		if err := os.WriteFile(out.file, out.encoded, 0o644); err != nil {
			return sdk.Fetched{Diagnostics: []sdk.Diagnostic{{
				Severity: sdk.Failure, Summary: "cannot write the output", Detail: err.Error(),
			}}}, nil
		}
	}
	return sdk.Fetched{}, nil
}

// Run takes the timed samples. A CPU has no host/device split: there are
// no launches to hide and nothing queued, so the kernel time and the call
// time are the same measure, the wall-clock time of one whole call of the
// case's pass (time.Now before and after). KernelTimes follow the contract's warm-up
// and stopping rule; CallTimes are the last Measurement.CallSamples of them
// (sdk.WallClockCallSamples).
func (b *Backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	c, err := b.lookup(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	m := req.Measurement
	timed := timedFiles(req)
	if len(timed) > 0 {
		// Poisoned before the first run: the host checks what the last
		// timed pass left, so a pass that writes nothing shows as poison.
		c.poison()
	}
	sample := b.wallClockSample(c, m.L2)
	kernelTimes, err := sdk.CollectSamples(ctx, m, sample)
	if err != nil {
		return sdk.Samples{}, fmt.Errorf("%s: kernel samples: %w", req.CaseID, err)
	}
	callTimes, err := sdk.WallClockCallSamples(ctx, kernelTimes, m.CallSamples, sample)
	if err != nil {
		return sdk.Samples{}, fmt.Errorf("%s: %w", req.CaseID, err)
	}
	sdk.MarkPhase(ctx, sdk.PhaseCalls)
	if len(timed) > len(c.outputs) {
		return sdk.Samples{}, fmt.Errorf("%s: %d timed output files for %d outputs", req.CaseID, len(timed), len(c.outputs))
	}
	for i, file := range timed {
		out := c.outputs[i]
		encode(out.dtype, out.values, out.encoded)
		if err := os.WriteFile(file, out.encoded, 0o644); err != nil {
			return sdk.Samples{}, fmt.Errorf("%s: write the timed output: %w", req.CaseID, err)
		}
	}
	sdk.MarkPhase(ctx, sdk.PhaseOutput)
	return sdk.Samples{
		KernelTimes: kernelTimes,
		CallTimes:   callTimes,
		Method:      "wall-clock",
		Facts: map[string]string{
			"timing": "wall-clock around one call of the pass; on a CPU call time and kernel time are the same measure",
		},
	}, nil
}

// timedFiles are the files a Run writes its last call's outputs to, in the
// op's order: Outputs, or the one Output of a request that names no
// others; none when the host asks for no timed output.
func timedFiles(req sdk.RunRequest) []string {
	if len(req.Outputs) > 0 {
		files := make([]string, len(req.Outputs))
		for i, f := range req.Outputs {
			files[i] = f.Path
		}
		return files
	}
	if req.Output != "" {
		return []string{req.Output}
	}
	return nil
}

// wallClockSample times one call of the case's pass. In the L2-cold mode it first
// evicts the caches, outside the timed span.
func (b *Backend) wallClockSample(c *preparedCase, l2 sdk.L2Mode) sdk.Sample {
	var evictor *cacheEvictor
	if l2 == sdk.L2Cold {
		evictor = newCacheEvictor()
	}
	return func(ctx context.Context) (time.Duration, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if evictor != nil {
			evictor.evict()
		}
		start := time.Now()
		c.run()
		return time.Since(start), nil
	}
}

// Release frees the case. Releasing a case that is not loaded, for example
// after Prepare answered with a diagnostic, is not an error.
func (b *Backend) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cases, req.CaseID)
	return nil
}

// lookup finds a prepared case. A call for a case that was never prepared
// is a broken host, not a finding about the case: it is an error.
func (b *Backend) lookup(caseID string) (*preparedCase, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cases[caseID]
	if !ok {
		return nil, fmt.Errorf("case %q is not prepared", caseID)
	}
	return c, nil
}
