// Command tunables is a test-only plugin with tunables, some of whose
// values misbehave, for the tuner's tests: a search over it meets every
// kind of candidate a real search meets, on a machine without a GPU.
//
// Its kernel is real attention: the host's fp64 reference (core/reference)
// over every query row, rounded to the case's dtype, so an honest
// configuration PASSes and its times are those of real work. The tunables:
//
//   - mode: ok computes; crash exits the process in the checked run (a
//     kernel that faults); nan writes NaN (a kernel that diverges); refuse
//     answers Prepare as unsupported, as a kernel whose tile needs more
//     shared memory than the device has is refused;
//   - repeat: the forward pass is done this many times per call, so
//     configurations differ in time.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

const name = "test-tunables"

var tunables = []sdk.Tunable{
	{Name: "mode", Values: []string{"ok", "crash", "nan", "refuse"}, Default: "ok",
		Description: "ok computes; crash, nan and refuse misbehave as their names say"},
	{Name: "repeat", Values: []string{"1", "2", "3", "4"}, Default: "2",
		Description: "forward passes per call"},
}

type loaded struct {
	tensors *inputs.Tensors
	mode    string
	repeat  int
	output  string
}

type backend struct {
	mu    sync.Mutex
	cases map[string]*loaded
}

func main() {
	sdk.Serve(func() sdk.Backend { return &backend{cases: map[string]*loaded{}} })
}

func (b *backend) Describe(context.Context) (sdk.Description, error) {
	return sdk.Description{
		Name: name, Version: "test", Available: true,
		Device: device(),
		Variants: []sdk.Variant{{
			Name:        name,
			Description: "test only: the fp64 reference as a kernel, with misbehaving tunable values",
			Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
				Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true, MaxSeqLen: 512},
			Tunables: tunables,
		}},
	}, nil
}

// ClaimGPUEnv, set to "yes", makes the plugin say it runs on a GPU
// (its kernel is still the CPU's), so that a test on a machine without
// one sees what the host asks of a GPU row.
const ClaimGPUEnv = "FLASHCORE_TEST_TUNABLES_CLAIM_GPU"

func device() sdk.Device {
	if os.Getenv(ClaimGPUEnv) == "yes" {
		return sdk.Device{Kind: "gpu", Name: "test plugin (claims a GPU)"}
	}
	return sdk.Device{Kind: "cpu", Name: "test plugin (no device)"}
}

func (b *backend) Prepare(_ context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	mode, repeat := "ok", 2
	if v, ok := req.Tunables["mode"]; ok {
		mode = v
	}
	if v, ok := req.Tunables["repeat"]; ok {
		repeat, _ = strconv.Atoi(v)
	}
	if mode == "refuse" {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported,
			Summary: "mode=refuse needs 300000 bytes of shared memory per block; the device allows 232448"}}}, nil
	}
	s := req.Shape
	t := &inputs.Tensors{Shape: s}
	var err error
	if t.Q, err = os.ReadFile(req.Files.Q); err == nil {
		if t.K, err = os.ReadFile(req.Files.K); err == nil {
			t.V, err = os.ReadFile(req.Files.V)
		}
	}
	if err != nil {
		return sdk.Prepared{}, err
	}
	h := sha256.New()
	h.Write(t.Q)
	h.Write(t.K)
	h.Write(t.V)
	b.mu.Lock()
	b.cases[req.CaseID] = &loaded{tensors: t, mode: mode, repeat: repeat, output: req.Files.Output}
	b.mu.Unlock()
	return sdk.Prepared{LoadedSHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// forward is the kernel: the reference over every row, rounded to dtype.
func (c *loaded) forward() []byte {
	s := c.tensors.Shape
	var out []byte
	for range c.repeat {
		rows := reference.Rows(s, op.CheckSettings{FullCheckMaxPairs: math.MaxInt64}, 0)
		values := make([]float64, 0, s.QElements())
		for _, row := range reference.Compute(c.tensors, rows) {
			values = append(values, row...)
		}
		if c.mode == "nan" {
			for i := range values {
				values[i] = math.NaN()
			}
		}
		out = inputs.Encode(s.DType, values)
	}
	return out
}

func (b *backend) lookup(id string) (*loaded, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cases[id]
	if !ok {
		return nil, fmt.Errorf("case %q is not prepared", id)
	}
	return c, nil
}

func (b *backend) Fetch(_ context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	c, err := b.lookup(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	if c.mode == "crash" {
		fmt.Fprintln(os.Stderr, "test-tunables: mode=crash: illegal memory access (simulated)")
		os.Exit(3)
	}
	return sdk.Fetched{}, os.WriteFile(c.output, c.forward(), 0o644)
}

func (b *backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	c, err := b.lookup(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	// A call is timed by the same wall clock as its kernel, so every kept
	// kernel sample is a call sample too (sdk.WallClockCallSamples): the
	// calls' distribution is the kernel's, as a GPU's host-inclusive call
	// contains its kernel. (Calls taken apart after the sampling would
	// time the same CPU work at another moment, and a busy machine can
	// make them look faster than every kernel sample, which the host
	// rightly refuses of a GPU row.)
	var last []byte
	sample := func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		last = c.forward()
		return time.Since(start), ctx.Err()
	}
	kernel, err := sdk.CollectSamples(ctx, req.Measurement, sample)
	if err != nil {
		return sdk.Samples{}, err
	}
	calls, err := sdk.WallClockCallSamples(ctx, kernel, max(len(kernel), req.Measurement.CallSamples), sample)
	if err != nil {
		return sdk.Samples{}, err
	}
	if req.Output != "" {
		if err := os.WriteFile(req.Output, last, 0o644); err != nil {
			return sdk.Samples{}, err
		}
	}
	// The contract the host asked this Run for, as facts, so that tests
	// see what each Run was told.
	m := req.Measurement
	facts := map[string]string{
		"asked_warmup_runs": strconv.Itoa(m.WarmupRuns),
		"asked_warmup_time": m.WarmupTime.String(),
		"asked_time_cap":    m.TimeCap.String(),
		"asked_min_samples": strconv.Itoa(m.MinSamples),
	}
	return sdk.Samples{KernelTimes: kernel, CallTimes: calls, Method: "wall-clock", Facts: facts}, nil
}

func (b *backend) Release(_ context.Context, req sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cases, req.CaseID)
	return nil
}
