package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// startKit starts a plugin of this repository as a real plugin process and
// returns the kit on it and its one variant.
func startKit(t *testing.T, name, pkg string, opts Options) (*kit, sdk.Variant) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts plugin binaries")
	}
	opts.Binary = buildtest.Plugin(t, name, pkg)
	if opts.CallTimeout == 0 {
		opts.CallTimeout = time.Minute
	}
	k := &kit{opts: opts, inst: start(t, opts)}
	desc, err := k.inst.Backend().Describe(context.Background())
	if err != nil || len(desc.Variants) != 1 {
		t.Fatalf("Describe = %+v, %v; want one variant", desc, err)
	}
	return k, desc.Variants[0]
}

// gqaCase is the odd-length GQA causal case, the one most kernels get wrong.
func gqaCase(t *testing.T, v sdk.Variant) Case {
	t.Helper()
	for _, c := range Cases(v) {
		if attention.ShapeOf(c.Case).KVHeads < attention.ShapeOf(c.Case).Heads && attention.ShapeOf(c.Case).Causal && attention.ShapeOf(c.Case).SeqQ != attention.ShapeOf(c.Case).SeqK {
			return c
		}
	}
	t.Fatalf("no GQA causal case with Sq != Sk for %+v", v.Capabilities)
	return Case{}
}

// The kit must be able to fail: test plugins that write a wrong output are
// caught by the same check flashcore run applies, with its reason.
func TestKitFindsWrongOutputs(t *testing.T) {
	tests := []struct {
		plugin string
		want   string
	}{
		{"echo", "output: FAIL"},
		{"zeros", "output: FAIL output is all zeros"},
		{"nan", "output: FAIL output has"},
	}
	for _, tc := range tests {
		t.Run(tc.plugin, func(t *testing.T) {
			k, v := startKit(t, "test-"+tc.plugin, "internal/testplugins/"+tc.plugin, Options{})
			_, err := k.checkCase(v, gqaCase(t, v), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkCase = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// The kit finds wrong gradients in the backward modes: the wronggrad
// test plugin is the cpu-reference with one fault planted, and each fault
// fails the case on the output it is in; its honest copy passes.
func TestKitFindsWrongGradients(t *testing.T) {
	tests := []struct {
		fault string
		want  string // "" for a pass
	}{
		{"honest", ""},
		{"zero-dk", "output dk: output: FAIL output is all zeros"},
		{"swap-dkdv", "output dk: output: FAIL relative L2 error"},
		{"noise-dq", "output dq: output: FAIL relative L2 error"},
	}
	built := buildtest.Plugin(t, "test-wronggrad", "internal/testplugins/wronggrad")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			binary := filepath.Join(t.TempDir(), "flashcore-backend-test-wronggrad-"+tc.fault)
			if err := os.WriteFile(binary, data, 0o755); err != nil {
				t.Fatal(err)
			}
			k := &kit{opts: Options{Binary: binary, CallTimeout: time.Minute}}
			k.inst = start(t, k.opts)
			desc, err := k.inst.Backend().Describe(context.Background())
			if err != nil || len(desc.Variants) != 1 {
				t.Fatalf("Describe = %+v, %v; want one variant", desc, err)
			}
			v := desc.Variants[0]
			cases := Cases(v)
			if len(cases) == 0 || attention.ShapeOf(cases[0].Case).Mode != sdk.Backward {
				t.Fatalf("the first case of a backward-only variant is %v, want one of mode bwd", cases[:min(1, len(cases))])
			}
			for _, c := range cases[:2] { // bwd and fwd+bwd on the GQA causal edge
				_, err := k.checkCase(v, c, nil)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", c.Name(), err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("%s: checkCase = %v, want an error containing %q", c.Name(), err, tc.want)
				}
			}
		})
	}
}

// The kit finds the same wrong outputs in a case of another op: rmsnorm's
// y written as x (echo), as zeros, as NaN.
func TestKitFindsWrongOutputsOfOtherOps(t *testing.T) {
	tests := []struct {
		plugin string
		want   string
	}{
		{"echo", "output y: output: FAIL"},
		{"zeros", "output is all zeros"},
		{"nan", "output has"},
	}
	c := ops.Examples("rmsnorm")[3] // 37 rows of 1003, fp16
	for _, tc := range tests {
		t.Run(tc.plugin, func(t *testing.T) {
			k, v := startKit(t, "test-"+tc.plugin, "internal/testplugins/"+tc.plugin, Options{})
			_, err := k.checkOpCase(v, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkOpCase(%s) = %v, want an error containing %q", c.ID, err, tc.want)
			}
		})
	}
}

// The cpu-reference passes a whole case, timed run included; the same case
// fails when the options ask for facts or a timing method it does not give,
// or when a warning on its Run comes back on the one more Run it gets.
func TestKitOnTheCPUReference(t *testing.T) {
	const cpuRef, cpuRefPkg = "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"
	// test-warns is the cpu-reference whose Runs warn as a Run does whose
	// host stalled while it queued the timed calls: a warning gets one more
	// Run, so a warning once passes and a warning every time fails.
	const warns, warnsPkg = "test-warns", "internal/testplugins/warns"
	tests := []struct {
		name, plugin, pkg string
		opts              Options
		want              string // "" for a pass
	}{
		{"passes", cpuRef, cpuRefPkg, Options{}, ""},
		{"required facts", cpuRef, cpuRefPkg, Options{RequiredFacts: []string{"goroutines", "kernel_function"}}, "facts [kernel_function] missing"},
		{"method", cpuRef, cpuRefPkg, Options{Method: "cuda-events+spin"}, `Method "wall-clock", want "cuda-events+spin"`},
		{"a warning once", warns, warnsPkg, Options{Env: []string{"FLASHCORE_TEST_WARN_RUNS=1"}}, ""},
		{"a warning every Run", warns, warnsPkg, Options{Env: []string{"FLASHCORE_TEST_WARN_RUNS=all"}}, "diagnostics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, v := startKit(t, tc.plugin, tc.pkg, tc.opts)
			_, err := k.checkCase(v, gqaCase(t, v), []sdk.L2Mode{sdk.L2Hot})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkCase: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkCase = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A plugin that reads its inputs before refusing a shape it cannot run is
// caught; the cpu-reference refuses first.
func TestKitFindsALateRefusal(t *testing.T) {
	echo, echoVariant := startKit(t, "test-echo", "internal/testplugins/echo", Options{})
	if err := echo.expectRefusal(echoVariant.Name, invalid(echoVariant)[0]); err == nil {
		t.Error("the echo plugin reads its inputs before looking at the shape, and the kit let it pass")
	}
	cpu, cpuVariant := startKit(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference", Options{})
	for _, r := range append(Undeclared(cpuVariant), invalid(cpuVariant)...) {
		if err := cpu.expectRefusal(cpuVariant.Name, r); err != nil {
			t.Errorf("cpu-reference: %v", err)
		}
	}
}
