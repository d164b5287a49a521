package cudatest

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// instantiation matches the kernel instantiation macros of the plugins'
// kernel.cu files, e.g. "V8_KERNEL(attn_fwd_fp16_d64_m48_n32_s2, half, ...".
var instantiation = regexp.MustCompile(`(?m)^[A-Z0-9]+_KERNEL\((attn_fwd_\w+),`)

// InstantiatedKernels lists the extern "C" attention kernels (attn_fwd_…)
// a kernel.cu instantiates.
func InstantiatedKernels(kernelSource []byte) []string {
	var names []string
	for _, m := range instantiation.FindAllSubmatch(kernelSource, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// InstantiatedModeKernels lists the extern "C" kernels of attention in
// mode m that a kernel.cu instantiates: those named
// cudakit.ModeKernelPrefix(m)_… (attn_bwd_… for bwd).
func InstantiatedModeKernels(kernelSource []byte, m sdk.Mode) []string {
	return InstantiatedOpKernels(kernelSource, cudakit.ModeKernelPrefix(m))
}

// ModeCases are the conformance cases of the variant (conformance.Cases,
// default tunables) in attention mode m, those inside the declared
// capabilities: the same edges (odd lengths, GQA, Sq ≠ Sk, causal rows
// past the keys) for a backward as for the forward.
func ModeCases(v sdk.Variant, m sdk.Mode) []op.Case {
	caps := v.CapabilitiesOf(attention.Name)
	var cases []op.Case
	seen := map[string]bool{}
	for _, c := range conformance.Cases(v) {
		s := attention.ShapeOf(c.Case)
		s.Mode = m
		if m == sdk.Forward {
			s.Mode = ""
		}
		mc := attention.NewCase(s, c.Distribution)
		if caps.Unsupported(s) != "" || seen[mc.ID] {
			continue
		}
		seen[mc.ID] = true
		cases = append(cases, mc)
	}
	return cases
}

// CheckPlans checks, without a GPU, that the spec's ops agree with its
// plans (Spec.CheckOps), and that spec plans every conformance case of its
// variant (conformance.Cases: attention shapes inside the declared
// capabilities), with every combination of tunables, to a kernel that
// kernelSource instantiates, that every instantiated attention kernel is
// reachable, and that every launch is well formed. Each other mode the
// variant declares (bwd, fwd+bwd) is checked the same way on the same
// shapes in that mode (ModeCases), through Spec.ModePlans, with the
// mode's named tensors: its kernels are the attn_bwd_… (attn_fwdbwd_…)
// ones, and its launches may name only the mode's tensors. CheckOpPlans
// does the same for other ops.
func CheckPlans(t *testing.T, spec cudakit.Spec, kernelSource []byte) {
	t.Helper()
	if err := spec.CheckOps(); err != nil {
		t.Error(err)
	}
	defined := InstantiatedKernels(kernelSource)
	if len(defined) == 0 {
		t.Fatal("kernel.cu instantiates no attn_fwd_* kernel")
	}
	for _, tun := range spec.Variant.Tunables {
		if !slices.Contains(tun.Values, tun.Default) {
			t.Errorf("tunable %s: default %q is not among %v", tun.Name, tun.Default, tun.Values)
		}
	}
	used := map[string]bool{}
	for _, c := range conformance.Cases(spec.Variant) {
		for _, combo := range conformance.Combinations(conformance.TunablesOf(spec.Variant.Tunables, attention.Name)) {
			l, err := spec.Plan(attention.ShapeOf(c.Case), combo)
			if err != nil {
				t.Errorf("plan %s %v: %v", attention.ShapeOf(c.Case), combo, err)
				continue
			}
			for _, step := range l.Steps() {
				if !slices.Contains(defined, step.Function) {
					t.Errorf("plan %s %v: kernel %s is not instantiated in kernel.cu", attention.ShapeOf(c.Case), combo, step.Function)
				}
				used[step.Function] = true
			}
			checkLaunch(t, attention.ShapeOf(c.Case).String(), l, nil)
		}
	}
	for _, name := range defined {
		if !used[name] {
			t.Errorf("kernel.cu instantiates %s, which no plan uses", name)
		}
	}
	for _, m := range spec.Variant.CapabilitiesOf(attention.Name).Modes {
		if m.Or() != sdk.Forward {
			checkModePlans(t, spec, kernelSource, m)
		}
	}
}

// checkModePlans is CheckPlans for attention mode m, through
// Spec.ModePlans[m].
func checkModePlans(t *testing.T, spec cudakit.Spec, kernelSource []byte, m sdk.Mode) {
	t.Helper()
	plan := spec.ModePlans[m]
	if plan == nil {
		return // CheckOps has said so
	}
	defined := InstantiatedModeKernels(kernelSource, m)
	if len(defined) == 0 {
		t.Errorf("the variant declares mode %s, but kernel.cu instantiates no %s_* kernel", m, cudakit.ModeKernelPrefix(m))
	}
	cases := ModeCases(spec.Variant, m)
	if len(cases) == 0 {
		t.Errorf("mode %s: no conformance case fits the declared capabilities", m)
	}
	used := map[string]bool{}
	for _, c := range cases {
		oc := OpCaseOf(c)
		for _, combo := range conformance.Combinations(conformance.TunablesOf(spec.Variant.Tunables, attention.Name)) {
			l, err := plan(oc, combo)
			if err != nil {
				t.Errorf("plan %s %v: %v", c.ID, combo, err)
				continue
			}
			for _, step := range l.Steps() {
				if !slices.Contains(defined, step.Function) {
					t.Errorf("plan %s %v: kernel %s is not instantiated in kernel.cu", c.ID, combo, step.Function)
				}
				used[step.Function] = true
			}
			checkLaunch(t, c.ID, l, tensorNames(oc))
		}
	}
	for _, name := range defined {
		if !used[name] {
			t.Errorf("kernel.cu instantiates %s, which no plan of mode %s uses", name, m)
		}
	}
}

// checkLaunch checks what every launch must be, whatever the plugin's grid
// rule: a valid plan (buffers, scratch, positive geometry) whose blocks are
// whole warps up to 1024 threads, and a grid inside CUDA's limits. tensors
// are the names of the case's tensors, or nil for attention's q, k, v, o.
func checkLaunch(t *testing.T, what string, l cudakit.Launch, tensors []string) {
	t.Helper()
	validate := l.Validate
	if tensors != nil {
		validate = func() error { return l.ValidateWith(tensors) }
	}
	if err := validate(); err != nil {
		t.Errorf("plan %s: %v", what, err)
		return
	}
	for _, step := range l.Steps() {
		switch {
		case step.Block.Threads() > 1024 || step.Block.Threads()%32 != 0:
			t.Errorf("%s: block %+v is not a whole number of warps up to 1024 threads", step.Function, step.Block)
		case step.Grid.Y > 65535 || step.Grid.Z > 65535:
			t.Errorf("%s: grid %+v exceeds CUDA's limit of 65535 in y or z", step.Function, step.Grid)
		}
	}
}

// CheckBuildOutputsAreCurrent checks, where make cuda-kernels has run, that
// the fatbin and manifest in the plugin's folder were built from the
// sources the plugin embeds: the check a cuda build does at start, made on
// any machine. Without build outputs it skips.
func CheckBuildOutputsAreCurrent(t *testing.T, kernelPath string, kernelSource []byte) {
	t.Helper()
	fatbin, err := os.ReadFile("kernel.fatbin")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no kernel.fatbin here: make cuda-kernels has not run")
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("kernel.fatbin.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := gpu.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kernel != kernelPath {
		t.Errorf("manifest kernel %s, want %s", m.Kernel, kernelPath)
	}
	if err := m.Verify(fatbin, cudakit.Sources(kernelPath, kernelSource)); err != nil {
		t.Error(err)
	}
}
