// Package conformance checks that a backend plugin keeps the host–plugin
// contract. A plugin author calls Run from their own go test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Options{Binary: buildPlugin(t)})
//	}
//
// Run starts the binary through go-plugin exactly as flashcore does, and for
// small cases inside every variant's declared capabilities it checks that
// the plugin echoes the hash of the inputs it loaded, writes every element
// of a correct output (against the fp64 reference), returns sane samples
// under the measurement contract, and releases cleanly. A plugin that is
// unavailable on this machine (no GPU, no torch) is skipped with its reason.
package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

// Options configure a conformance run.
type Options struct {
	// Binary is the path of the plugin executable.
	Binary string
	// Env is added to the plugin's environment.
	Env []string
	// RuntimeSkipsAllowed lets a variant answer Unsupported at Prepare for a
	// case inside its declared capabilities. Only backends whose library
	// decides at run time (PyTorch's SDPA dispatch) should set it.
	RuntimeSkipsAllowed bool
	// MaxCasesPerVariant bounds the run time for slow backends; 0 means all.
	MaxCasesPerVariant int
	// CallTimeout bounds every plugin call; 0 means 5 minutes.
	CallTimeout time.Duration
}

// Run checks the plugin at opts.Binary. It fails t on any broken rule.
func Run(t *testing.T, opts Options) {
	t.Helper()
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Minute
	}
	ctx := context.Background()
	inst, err := host.Start(ctx, host.Plugin{Name: filepath.Base(opts.Binary), Path: opts.Binary}, host.Options{Env: opts.Env})
	if err != nil {
		if se, ok := host.IsStartError(err); ok && se.Unavailable {
			t.Skipf("plugin unavailable here: %s", se.Reason)
		}
		t.Fatalf("start plugin: %v", err)
	}
	t.Cleanup(inst.Close)
	desc := describe(t, ctx, inst, opts)
	for _, v := range desc.Variants {
		t.Run(v.Name, func(t *testing.T) {
			cases := casesFor(v.Capabilities)
			if opts.MaxCasesPerVariant > 0 && len(cases) > opts.MaxCasesPerVariant {
				cases = cases[:opts.MaxCasesPerVariant]
			}
			for _, c := range cases {
				t.Run(c.ID, func(t *testing.T) { checkCase(t, ctx, inst, v, c, opts) })
			}
		})
	}
}

func describe(t *testing.T, ctx context.Context, inst *host.Instance, opts Options) sdk.Description {
	t.Helper()
	callCtx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
	defer cancel()
	desc, err := inst.Backend().Describe(callCtx)
	if err != nil {
		t.Fatalf("Describe: %v\nstderr:\n%s", err, inst.StderrTail())
	}
	if !desc.Available {
		t.Skipf("plugin unavailable here: %s", desc.UnavailableReason)
	}
	switch {
	case desc.Name == "":
		t.Error("Describe: empty Name")
	case desc.Version == "":
		t.Error("Describe: empty Version")
	case len(desc.Variants) == 0:
		t.Fatal("Describe: no variants")
	}
	for _, v := range desc.Variants {
		if v.Name == "" || len(v.Capabilities.DTypes) == 0 || !(v.Capabilities.Causal || v.Capabilities.NonCausal) {
			t.Errorf("variant %q: needs a name, at least one dtype and one masking mode: %+v", v.Name, v.Capabilities)
		}
		for _, tun := range v.Tunables {
			if !slices.Contains(tun.Values, tun.Default) {
				t.Errorf("variant %s tunable %s: default %q not among values %v", v.Name, tun.Name, tun.Default, tun.Values)
			}
		}
	}
	return desc
}

// casesFor returns small cases, all inside caps: each declared dtype, and
// each declared ability (causal, GQA, Sq != Sk) with a length that is not a
// multiple of any usual tile.
func casesFor(caps sdk.Capabilities) []suite.Case {
	headDim := 64
	if len(caps.HeadDims) > 0 && !slices.Contains(caps.HeadDims, 64) {
		headDim = caps.HeadDims[0]
	}
	var cases []suite.Case
	add := func(s sdk.Shape) {
		if caps.MaxSeqLen > 0 && max(s.SeqQ, s.SeqK) > caps.MaxSeqLen {
			return
		}
		c := suite.Case{Shape: s, Distribution: suite.Normal}
		c.ID = suite.CaseID(c.Shape, c.Distribution)
		cases = append(cases, c)
	}
	causal := !caps.NonCausal
	for _, dt := range caps.DTypes {
		add(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 64, SeqK: 64, HeadDim: headDim, DType: dt, Causal: causal})
	}
	dt := caps.DTypes[0]
	if caps.Causal && caps.NonCausal {
		add(sdk.Shape{Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 77, SeqK: 77, HeadDim: headDim, DType: dt, Causal: true})
	}
	if caps.GroupedQueryHeads {
		add(sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 48, SeqK: 48, HeadDim: headDim, DType: dt, Causal: causal})
	}
	if caps.UnequalSeqLens {
		add(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 33, SeqK: 95, HeadDim: headDim, DType: dt, Causal: causal})
	}
	return cases
}

func checkCase(t *testing.T, ctx context.Context, inst *host.Instance, v sdk.Variant, c suite.Case, opts Options) {
	api := inst.Backend()
	defaults := suite.Default()
	tensors := inputs.Generate(defaults.Seed, c)
	files, err := inputs.WriteFiles(t.TempDir(), tensors)
	if err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
	defer cancel()
	prepared, err := api.Prepare(callCtx, sdk.PrepareRequest{CaseID: c.ID, Variant: v.Name, Shape: c.Shape, Files: files, InputSHA256: tensors.SHA256})
	if err != nil {
		t.Fatalf("Prepare: %v\nstderr:\n%s", err, inst.StderrTail())
	}
	defer func() {
		if err := api.Release(callCtx, sdk.ReleaseRequest{CaseID: c.ID}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if skip := unsupportedIn(prepared.Diagnostics); skip != "" {
		if opts.RuntimeSkipsAllowed {
			t.Skipf("backend declined at run time: %s", skip)
		}
		t.Fatalf("Prepare declined a case inside the declared capabilities: %s", skip)
	}
	if prepared.LoadedSHA256 != tensors.SHA256 {
		t.Fatalf("LoadedSHA256 = %q, want the hash of the input files %q", prepared.LoadedSHA256, tensors.SHA256)
	}
	if _, err := api.Fetch(callCtx, sdk.FetchRequest{CaseID: c.ID}); err != nil {
		t.Fatalf("Fetch: %v\nstderr:\n%s", err, inst.StderrTail())
	}
	output, err := os.ReadFile(files.Output)
	if err != nil {
		t.Fatalf("Fetch wrote no output file: %v", err)
	}
	report := check.Check(tensors, output, defaults.Check, defaults.Tolerances[c.Shape.DType])
	if report.Verdict != check.Pass {
		t.Fatalf("output: %s (max abs err %.3g, rel L2 %.3g)", report.Reason, report.MaxAbsErr, report.RelL2Err)
	}
	checkSamples(t, callCtx, api, c, inst)
}

func checkSamples(t *testing.T, ctx context.Context, api sdk.Backend, c suite.Case, inst *host.Instance) {
	m := sdk.Measurement{WarmupRuns: 2, MinSamples: 6, MaxSamples: 50, TargetNoise: 0.05,
		TimeCap: 300 * time.Millisecond, L2: sdk.L2Hot, CallSamples: 3}
	samples, err := api.Run(ctx, sdk.RunRequest{CaseID: c.ID, Measurement: m})
	if err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, inst.StderrTail())
	}
	if err := saneSamples(samples, m); err != nil {
		t.Error(err)
	}
}

func saneSamples(s sdk.Samples, m sdk.Measurement) error {
	switch {
	case len(s.KernelTimes) < m.MinSamples:
		return fmt.Errorf("Run: %d kernel samples, the contract asks for at least %d", len(s.KernelTimes), m.MinSamples)
	case len(s.KernelTimes) > m.MaxSamples:
		return fmt.Errorf("Run: %d kernel samples, more than max_samples %d", len(s.KernelTimes), m.MaxSamples)
	case len(s.CallTimes) == 0:
		return fmt.Errorf("Run: no call-time samples")
	case s.Method == "":
		return fmt.Errorf("Run: Method is empty; say how kernel time was taken")
	}
	for i, d := range append(append([]time.Duration(nil), s.KernelTimes...), s.CallTimes...) {
		if d <= 0 || d > time.Minute {
			return fmt.Errorf("Run: sample %d is %v, not a plausible time", i, d)
		}
	}
	return nil
}

func unsupportedIn(diags []sdk.Diagnostic) string {
	for _, d := range diags {
		if d.Severity == sdk.Unsupported {
			return d.Summary + " " + d.Detail
		}
	}
	return ""
}
