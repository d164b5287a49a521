// Package conformance is the one test kit every backend plugin's tests
// call: it checks that a plugin keeps the host–plugin contract and computes
// attention correctly by exactly the rules `flashcore run` applies. A
// plugin author calls Run from their own go test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Options{Binary: buildPlugin(t)})
//	}
//
// Where to start: Run, then Cases. The steps, for each variant the plugin
// describes:
//
//  1. Start the binary as a real plugin process through host.Start, as
//     flashcore does; a plugin unavailable here (no GPU, no torch) is
//     skipped with its reason. A variant that needs a GPU the device lacks
//     must refuse a case, and is then skipped.
//
//  2. Refusals: every shape just outside a declared capability (a dtype, a
//     head dim, a masking, GQA, Sq ≠ Sk, a length or element limit), an
//     invalid shape, an unknown tunable and an unknown variant must come
//     back as an Unsupported diagnostic before any input is read.
//
//  3. Attention cases (cases.go), all inside the declared capabilities,
//     in every mode the variant declares (forward, and the backward modes
//     bwd and fwd+bwd of sdk.Capabilities.Modes): inputs from
//     the default suite's seed (core/inputs), Prepare (the loaded hash must
//     be the inputs' hash), the checked run repeated as the default suite
//     says with every output bit-identical, each checked by core/check
//     against the fp64 reference (the reference backward for dQ, dK and
//     dV) with the default suite's tolerances (CheckOutputs), a timed Run
//     whose samples obey the contract and whose last outputs pass the same
//     check, and Release.
//
//  4. Every other op the variant lists (sdk.Variant.Ops) runs its example
//     cases (ops.Examples) by the same rules, checked by the op (ops.go).
//
// There is no other reference and no other tolerance table: a plugin that
// passes here passes the check of a `flashcore run` with the default suite
// on the same shapes.
package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// Options configure a conformance run.
type Options struct {
	// Binary is the path of the plugin executable.
	Binary string
	// Env is added to the plugin's environment.
	Env []string
	// PythonFile, for the python-file runner, is the backend file it
	// serves; the backend is then named after the file.
	PythonFile string
	// CUDAFile, for the cuda-file runner, is the spec it serves; the
	// backend is then named after the spec.
	CUDAFile string
	// RuntimeSkipsAllowed lets a variant answer Unsupported at Prepare for a
	// case inside its declared capabilities. Only backends whose library
	// decides at run time (PyTorch's SDPA dispatch) should set it.
	RuntimeSkipsAllowed bool
	// MaxCasesPerVariant bounds the run time for slow backends; 0 means all.
	// Cases come most telling first (see Cases).
	MaxCasesPerVariant int
	// CallTimeout bounds every plugin call; 0 means 5 minutes.
	CallTimeout time.Duration
	// RequiredFacts are the Prepared facts every case must record (the CUDA
	// plugins: kernel, target and resources).
	RequiredFacts []string
	// Method, when set, is the sdk.Samples.Method every Run must report.
	Method string
	// Pins, when set, check the attention cases in passes, one per pin:
	// in each, the pin's tunables keep its values in every case and the
	// others are swept as Cases says (PinnedCases). A backend whose
	// tunable picks between kernels, each with tunables of its own, pins
	// each choice so that each kernel's space is swept whole, not one
	// value at a time.
	Pins []map[string]string
	// Shapes are attention shapes of the backend's own, checked besides the
	// kit's edges: in every pass (each pin, or once without pins), each
	// with every combination of the pass's tunables (ShapeCases). A kernel
	// whose paths the edges cannot reach (a persistent grid's blocks taking
	// several tiles, at more tiles than the GPU has SMs) names them here.
	Shapes []sdk.Shape
}

// defaults is the suite `flashcore run` uses when it is given none: its
// seed, check settings and tolerances are the kit's.
var defaults = sync.OnceValue(suite.Default)

// CheckOutput checks output, the bytes a backend wrote for the inputs t,
// as `flashcore run` checks it with the default suite: core/check against
// the fp64 reference, with the default suite's check settings and its
// tolerance for the dtype. Plugins' own unit tests use it too, so that
// there is one definition of a correct output.
func CheckOutput(t *inputs.Tensors, output []byte) check.Report {
	d := defaults()
	return check.Check(t, output, d.Check, d.Tolerances[t.Shape.DType])
}

// CheckOutputs checks the outputs of a case of any op and mode, in the
// op's order (op.Spec.OutputsOf), as `flashcore run` checks them with the
// default suite: the op's own check, each output held to the default
// suite's tolerance for it. in are the case's inputs as
// ops.Of(c).Generate made them. There is one report per output.
func CheckOutputs(c op.Case, in *op.Inputs, outputs [][]byte) []check.Report {
	d := defaults()
	return ops.Of(c).Check(c, in, outputs, d.Check, d.TolerancesOf(c))
}

// Run checks the plugin at opts.Binary. It fails t on any broken rule.
func Run(t *testing.T, opts Options) {
	t.Helper()
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Minute
	}
	k := &kit{opts: opts}
	k.inst = start(t, opts)
	desc := k.describe(t)
	for _, v := range desc.Variants {
		t.Run(v.Name, func(t *testing.T) { k.checkVariant(t, desc.Device, v) })
	}
}

// kit is one plugin process under test.
type kit struct {
	opts Options
	inst *host.Instance
}

func start(t *testing.T, opts Options) *host.Instance {
	t.Helper()
	inst, err := host.Start(context.Background(), pluginOf(opts), host.Options{Env: opts.Env})
	if err != nil {
		if se, ok := host.IsStartError(err); ok && se.Unavailable {
			t.Skipf("plugin unavailable here: %s", se.Reason)
		}
		t.Fatalf("start plugin: %v", err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// call runs one plugin call under the call timeout.
func call[T any](k *kit, f func(ctx context.Context, api sdk.Backend) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.opts.CallTimeout)
	defer cancel()
	out, err := f(ctx, k.inst.Backend())
	if err != nil {
		err = fmt.Errorf("%w\nplugin stderr:\n%s", err, k.inst.StderrTail())
	}
	return out, err
}

func (k *kit) describe(t *testing.T) sdk.Description {
	t.Helper()
	desc, err := call(k, func(ctx context.Context, api sdk.Backend) (sdk.Description, error) { return api.Describe(ctx) })
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if !desc.Available {
		t.Skipf("plugin unavailable here: %s", desc.UnavailableReason)
	}
	if problems := describeProblems(desc); len(problems) > 0 {
		t.Fatal(errors.Join(problems...))
	}
	return desc
}

// describeProblems lists what is wrong with a description.
func describeProblems(desc sdk.Description) []error {
	var problems []error
	switch {
	case desc.Name == "":
		problems = append(problems, errors.New("Describe: empty Name"))
	case desc.Version == "":
		problems = append(problems, errors.New("Describe: empty Version"))
	case len(desc.Variants) == 0:
		problems = append(problems, errors.New("Describe: no variants"))
	}
	for _, v := range desc.Variants {
		problems = append(problems, capabilityProblems(v)...)
		for _, tun := range v.Tunables {
			if !slices.Contains(tun.Values, tun.Default) {
				problems = append(problems, fmt.Errorf("variant %s tunable %s: default %q not among values %v", v.Name, tun.Name, tun.Default, tun.Values))
			}
		}
	}
	return problems
}

// capabilityProblems are what is wrong with the capabilities v declares:
// each op it runs needs a dtype, attention a masking mode too, and each
// op's own capabilities must be of an op v lists.
func capabilityProblems(v sdk.Variant) []error {
	var problems []error
	if v.Name == "" {
		problems = append(problems, fmt.Errorf("variant %q: needs a name", v.Name))
	}
	names := v.Ops
	if len(names) == 0 {
		names = []string{"attention"}
	}
	for _, name := range names {
		c := v.CapabilitiesOf(name)
		if len(c.DTypes) == 0 || (name == "attention" && !(c.Causal || c.NonCausal)) {
			problems = append(problems, fmt.Errorf("variant %q, op %s: needs at least one dtype and, for attention, one masking mode: %+v", v.Name, name, c))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.OpCapabilities)) {
		if !ops.Supports(v, name) {
			problems = append(problems, fmt.Errorf("variant %q declares capabilities of op %s, which its Ops do not list", v.Name, name))
		}
	}
	for _, t := range v.Tunables {
		for _, name := range t.Ops {
			if !ops.Supports(v, name) {
				problems = append(problems, fmt.Errorf("variant %q: tunable %s applies to op %s, which its Ops do not list", v.Name, t.Name, name))
			}
		}
	}
	return problems
}

func (k *kit) checkVariant(t *testing.T, device sdk.Device, v sdk.Variant) {
	if len(v.Ops) > 0 {
		t.Run("ops", func(t *testing.T) { k.checkOps(t, v) })
	}
	if !ops.Supports(v, "attention") {
		return
	}
	cases := Cases(v)
	if len(k.opts.Pins) > 0 {
		cases = nil
		for _, pin := range k.opts.Pins {
			pinned, err := PinnedCases(v, pin)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, pinned...)
		}
	}
	passes := k.opts.Pins
	if len(passes) == 0 {
		passes = []map[string]string{nil}
	}
	for _, pin := range passes {
		own, err := ShapeCases(v, pin, k.opts.Shapes)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, own...)
	}
	if len(cases) == 0 {
		t.Fatalf("no case fits the declared capabilities %+v", v.CapabilitiesOf("attention"))
	}
	if v.CapabilitiesOf("attention").NeedsGPU && device.Kind != "gpu" {
		if err := k.expectRefusal(v.Name, Refusal{Why: "needs a GPU", Shape: attention.ShapeOf(cases[0].Case)}); err != nil {
			t.Error(err)
		}
		t.Skipf("needs a GPU; this %s device has none (and it refused a case)", device.Kind)
	}
	t.Run("refuses", func(t *testing.T) { k.checkRefusals(t, v) })
	if n := k.opts.MaxCasesPerVariant; n > 0 && len(cases) > n {
		t.Logf("checking the first %d of %d cases (MaxCasesPerVariant)", n, len(cases))
		cases = cases[:n]
	}
	sampled := map[string]bool{} // tunable combinations whose Run has been checked
	for _, c := range cases {
		combo := Case{Tunables: c.Tunables}.Name()
		var modes []sdk.L2Mode
		switch {
		case len(sampled) == 0:
			modes = []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold}
		case !sampled[combo]:
			modes = []sdk.L2Mode{sdk.L2Hot}
		}
		sampled[combo] = true
		t.Run(c.Name(), func(t *testing.T) {
			skip, err := k.checkCase(v, c, modes)
			switch {
			case err != nil:
				t.Fatal(err)
			case skip != "":
				t.Skipf("backend declined at run time: %s", skip)
			}
		})
	}
}

// checkCase takes an attention case through the lifecycle the runner
// drives (runCase, the kit's one driver for every op). It returns the
// reason of an allowed run-time refusal, or what broke a rule.
func (k *kit) checkCase(v sdk.Variant, c Case, modes []sdk.L2Mode) (skip string, err error) {
	return k.runCase(v, c.Case, c.Tunables, modes)
}

func (k *kit) preparedProblems(p sdk.Prepared, inputHash string) error {
	if len(p.Diagnostics) > 0 {
		return fmt.Errorf("Prepare: diagnostics %+v", p.Diagnostics)
	}
	if p.LoadedSHA256 != inputHash {
		return fmt.Errorf("LoadedSHA256 = %q, want the hash of the input files %q", p.LoadedSHA256, inputHash)
	}
	var missing []string
	for _, key := range k.opts.RequiredFacts {
		if p.Facts[key] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("Prepare: facts %v missing (facts: %v)", missing, p.Facts)
	}
	return nil
}

// quickMeasurement keeps the sampling in tests short.
func quickMeasurement(mode sdk.L2Mode) sdk.Measurement {
	return sdk.Measurement{WarmupRuns: 2, MinSamples: 6, MaxSamples: 50, TargetNoise: 0.05,
		TimeCap: 300 * time.Millisecond, L2: mode, CallSamples: 3, Placements: 2}
}

func (k *kit) sampleProblems(s sdk.Samples, m sdk.Measurement) error {
	// The stopping rule is replayed without the host's clock of the Run:
	// the kit checks where each block ends, not the time caps.
	why := cmp.Or(runner.SampleRuleViolation(s, m), runner.StopRuleViolation(s, m, 0))
	switch {
	case len(s.Diagnostics) > 0:
		return fmt.Errorf("diagnostics %+v", s.Diagnostics)
	case why != "":
		return errors.New(why)
	case len(s.CallTimes) != m.CallSamples:
		return fmt.Errorf("%d call-time samples, want call_samples %d", len(s.CallTimes), m.CallSamples)
	case s.Method == "":
		return errors.New("Method is empty; say how kernel time was taken")
	case k.opts.Method != "" && s.Method != k.opts.Method:
		return fmt.Errorf("Method %q, want %q", s.Method, k.opts.Method)
	}
	return nil
}

// verdict turns a FAIL into an error that says what was checked.
func verdict(what string, r check.Report) error {
	if r.Verdict == check.Pass {
		return nil
	}
	return fmt.Errorf("%s: %s %s (max abs err %.3g, rel L2 %.3g, %d of %d rows checked)",
		what, r.Verdict, r.Reason, r.MaxAbsErr, r.RelL2Err, r.RowsChecked, r.RowsTotal)
}

func unsupportedIn(diags []sdk.Diagnostic) string {
	for _, d := range diags {
		if d.Severity == sdk.Unsupported {
			return d.Summary + " " + d.Detail
		}
	}
	return ""
}

// pluginOf is the plugin opts describe, as the host starts it.
func pluginOf(opts Options) host.Plugin {
	if opts.PythonFile != "" {
		name := strings.TrimSuffix(filepath.Base(opts.PythonFile), ".py")
		return host.Plugin{Name: name, Path: opts.Binary, PythonFile: opts.PythonFile}
	}
	if opts.CUDAFile != "" {
		return host.Plugin{Name: host.CUDAFileName(opts.CUDAFile), Path: opts.Binary, CUDAFile: opts.CUDAFile}
	}
	return host.Plugin{Name: filepath.Base(opts.Binary), Path: opts.Binary}
}
