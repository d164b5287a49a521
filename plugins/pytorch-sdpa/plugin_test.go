package pytorchsdpa

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/bridge/bridgetest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

var variantNames = []string{"sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "torch-rmsnorm",
	"sdpa-paged", "sdpa-varlen", "flex-attention"}

// rmsnormCases cover each dtype, a row that is not a power of two and a
// hidden size of a large model.
var rmsnormCases = []op.Params{
	{"rows": "37", "cols": "300", "dtype": "fp32"},
	{"rows": "64", "cols": "4096", "dtype": "fp16"},
	{"rows": "5", "cols": "1000", "dtype": "bf16"},
}

// shapes cover each dtype, causal and not, grouped-query heads, odd
// lengths and seq_q != seq_k both ways.
var shapes = []sdk.Shape{
	bridgetest.Shape(1, 2, 2, 64, 64, 64, false, sdk.FP32),
	bridgetest.Shape(2, 4, 2, 77, 77, 64, true, sdk.FP16),
	bridgetest.Shape(1, 4, 1, 33, 95, 128, true, sdk.BF16),
	bridgetest.Shape(1, 2, 2, 100, 40, 64, false, sdk.FP16),
}

func start(t *testing.T) (sdk.Backend, sdk.Description) {
	t.Helper()
	bridgetest.RequireTorch(t)
	backend := bridgetest.StartPlugin(t, bridgetest.Plugin(t, "pytorch-sdpa"))
	d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if !d.Available {
		t.Fatalf("Describe: unavailable although torch imports: %s", d.UnavailableReason)
	}
	return backend, d
}

// The plugin binary, started through go-plugin as the host starts it (one
// start: importing torch takes seconds).
func TestThroughGoPlugin(t *testing.T) {
	backend, d := start(t)
	t.Run("variants", func(t *testing.T) { testVariants(t, backend, d) })
	t.Run("rmsnorm", func(t *testing.T) { testRMSNorm(t, backend, d) })
	t.Run("gpu-figures", func(t *testing.T) { testGPUFigures(t, backend, d) })
}

// torch-rmsnorm on whatever device is here: outputs, the timed ones too,
// against rmsnorm's fp64 reference, samples under the contract; and an
// attention case refused, since the variant offers rmsnorm alone.
func testRMSNorm(t *testing.T, backend sdk.Backend, d sdk.Description) {
	m := bridgetest.QuickMeasurement()
	for i, p := range rmsnormCases {
		c := bridgetest.NewOpCase(t, "torch-rmsnorm", rmsnorm.Name, p, uint64(i))
		out := bridgetest.RunOpCase(t, backend, c, &m)
		if out.Skip != nil {
			t.Errorf("%s: skipped: %s", c.Case.ID, out.Skip.Summary)
			continue
		}
		t.Logf("%s: %s", c.Case.ID, bridgetest.Figures(out.Samples))
	}
	c := bridgetest.NewCase(t, "attention", "torch-rmsnorm", shapes[0], 1)
	want := "torch-rmsnorm: op attention not supported"
	if out := bridgetest.RunCase(t, backend, c, nil); out.Skip == nil || out.Skip.Summary != want {
		t.Errorf("attention on torch-rmsnorm: %+v, want the skip %q", out.Skip, want)
	}
}

// Every variant on whatever device is here: outputs against the fp64
// reference, samples under the contract. On a CPU the GPU-only variants
// must skip; on a GPU PyTorch may refuse a pinned backend for a case, which
// must come back as a skip.
func testVariants(t *testing.T, backend sdk.Backend, d sdk.Description) {
	var names []string
	for _, v := range d.Variants {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, variantNames) {
		t.Fatalf("variants %v, want %v", names, variantNames)
	}
	gpu := d.Device.Kind == "gpu"
	m := bridgetest.QuickMeasurement()
	for _, v := range d.Variants {
		if !ops.Supports(v, attention.Name) {
			continue // testRMSNorm's
		}
		t.Run(v.Name, func(t *testing.T) {
			if v.Capabilities.NeedsGPU && !gpu {
				c := bridgetest.NewCase(t, "c", v.Name, shapes[1], 1)
				if out := bridgetest.RunCase(t, backend, c, &m); out.Skip == nil {
					t.Errorf("%s ran on a machine without a GPU", v.Name)
				}
				return
			}
			for i, s := range shapes {
				if v.Capabilities.Unsupported(s) != "" {
					continue
				}
				c := bridgetest.NewCase(t, fmt.Sprintf("c%d", i), v.Name, s, uint64(i))
				out := bridgetest.RunCase(t, backend, c, &m)
				switch {
				case out.Skip != nil && !gpu:
					t.Errorf("%s: skipped on the CPU: %s: %s", s, out.Skip.Summary, out.Skip.Detail)
				case out.Skip != nil:
					t.Logf("%s: PyTorch refused: %s: %s", s, out.Skip.Summary, out.Skip.Detail)
				default:
					t.Logf("%s: %s", s, bridgetest.Figures(out.Samples))
				}
			}
		})
	}
}

// On a GPU: every variant at the seed shape and a large one, measured with
// the default contract. Kernel time must come from CUPTI (Python's dispatch,
// 20-40 µs a call, never enters it), and for the default dispatch at the
// seed shape the events+sleep cross-check must sit just above it. The
// same holds for torch-rmsnorm at a large model's size: its kernel time
// is CUPTI's sum over every kernel one call launches.
func testGPUFigures(t *testing.T, backend sdk.Backend, d sdk.Description) {
	if d.Device.Kind != "gpu" {
		t.Skip("no GPU here")
	}
	t.Logf("device: %+v", d.Device)
	norm := bridgetest.NewOpCase(t, "torch-rmsnorm", rmsnorm.Name, op.Params{"rows": "4096", "cols": "8192", "dtype": "fp16"}, 7)
	m := sdk.DefaultMeasurement()
	if out := bridgetest.RunOpCase(t, backend, norm, &m); out.Skip == nil {
		t.Logf("%-14s %s: %s", "torch-rmsnorm", norm.Case.ID, bridgetest.Figures(out.Samples))
		bridgetest.CheckCUPTI(t, out.Samples)
	} else {
		t.Errorf("torch-rmsnorm skipped on a GPU: %s", out.Skip.Summary)
	}
	seed := bridgetest.Shape(1, 8, 8, 512, 512, 64, false, sdk.FP16)
	large := bridgetest.Shape(4, 16, 16, 2048, 2048, 128, false, sdk.FP16)
	for _, s := range []sdk.Shape{seed, large} {
		shared := bridgetest.NewCase(t, "gpu", "", s, 7) // drawing large inputs takes a while
		for _, v := range d.Variants {
			if !ops.Supports(v, attention.Name) {
				continue
			}
			for _, l2 := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
				if l2 == sdk.L2Cold && v.Name != "sdpa" {
					continue // keeps the GPU run short; the mechanism is shared
				}
				m := sdk.DefaultMeasurement()
				m.L2 = l2
				c := shared
				c.Request.Variant = v.Name
				out := bridgetest.RunCase(t, backend, c, &m)
				if out.Skip != nil {
					t.Logf("%-14s %s %s: skip: %s", v.Name, s, l2, out.Skip.Summary)
					continue
				}
				t.Logf("%-14s %s %s: %s", v.Name, s, l2, bridgetest.Figures(out.Samples))
				bridgetest.CheckCUPTI(t, out.Samples)
				if v.Name == "sdpa" && s == seed && l2 == sdk.L2Hot {
					bridgetest.CheckEventsAboveCUPTI(t, out.Samples)
				}
			}
		}
	}
}
