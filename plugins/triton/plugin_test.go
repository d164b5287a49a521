package triton

import (
	"fmt"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/bridge/bridgetest"
	"github.com/flashcore/bench/sdk"
)

// shapes cover both head dims, causal and not, grouped-query heads, odd
// lengths that leave ragged tiles, and seq_q != seq_k both ways; all small
// enough for the CPU interpreter's limits.
var shapes = []sdk.Shape{
	bridgetest.Shape(1, 2, 2, 64, 64, 64, false, sdk.FP16),
	bridgetest.Shape(2, 4, 2, 77, 77, 64, true, sdk.FP16),
	bridgetest.Shape(1, 4, 1, 33, 95, 128, true, sdk.FP32),
	bridgetest.Shape(1, 2, 2, 100, 40, 64, true, sdk.FP16),
	bridgetest.Shape(1, 2, 2, 45, 130, 128, false, sdk.BF16),
}

// The plugin binary, started through go-plugin as the host starts it.
func TestThroughGoPlugin(t *testing.T) {
	bridgetest.RequireTorch(t)
	backend := bridgetest.StartPlugin(t, bridgetest.Plugin(t, "triton"))
	d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if !d.Available {
		t.Fatalf("Describe: unavailable although torch imports: %s", d.UnavailableReason)
	}
	if len(d.Variants) != 1 || d.Variants[0].Name != "triton" {
		t.Fatalf("variants %+v, want one named triton", d.Variants)
	}
	t.Run("cases", func(t *testing.T) { testCases(t, backend, d.Variants[0]) })
	t.Run("limits", func(t *testing.T) { testLimits(t, backend, d) })
	t.Run("gpu-figures", func(t *testing.T) { testGPUFigures(t, backend, d) })
}

// Every shape the variant declares, against the fp64 reference; the kernel
// writes into a poisoned buffer, so an unwritten element would fail.
func testCases(t *testing.T, backend sdk.Backend, v sdk.Variant) {
	m := bridgetest.QuickMeasurement()
	ran := 0
	for i, s := range shapes {
		if v.Capabilities.Unsupported(s) != "" {
			continue
		}
		c := bridgetest.NewCase(t, fmt.Sprintf("c%d", i), v.Name, s, uint64(i))
		started := time.Now()
		out := bridgetest.RunCase(t, backend, c, &m)
		if out.Skip != nil {
			t.Errorf("%s: skipped inside its capabilities: %s", s, out.Skip.Summary)
			continue
		}
		if out.Prepared.Facts["config"] == "" {
			t.Errorf("%s: no config in the facts %v", s, out.Prepared.Facts)
		}
		ran++
		t.Logf("%s (%.1f s with compiling): config %s: %s", s, time.Since(started).Seconds(),
			out.Prepared.Facts["config"], bridgetest.Figures(out.Samples))
	}
	if ran < len(shapes)-1 {
		t.Errorf("ran %d of %d shapes", ran, len(shapes))
	}
}

// Under the interpreter the variant declares small limits and says why; a
// case past them is a skip, not minutes of NumPy.
func testLimits(t *testing.T, backend sdk.Backend, d sdk.Description) {
	if d.Device.Kind == "gpu" {
		if caps := d.Variants[0].Capabilities; caps.MaxSeqLen != 0 || caps.MaxElements != 0 {
			t.Errorf("on a GPU the variant has interpreter limits: %+v", caps)
		}
		return
	}
	caps := d.Variants[0].Capabilities
	if caps.MaxSeqLen == 0 || caps.MaxElements == 0 || d.Variants[0].Description == "" {
		t.Fatalf("interpreter variant without limits or reason: %+v", d.Variants[0])
	}
	big := bridgetest.Shape(1, 1, 1, caps.MaxSeqLen+1, caps.MaxSeqLen+1, 64, false, sdk.FP16)
	out := bridgetest.RunCase(t, backend, bridgetest.NewCase(t, "big", "triton", big, 9), nil)
	if out.Skip == nil {
		t.Errorf("%s ran past the declared limit %d", big, caps.MaxSeqLen)
	}
}

// On a GPU: the seed shape and a large one, fp16 and bf16, hot and cold,
// with the default contract; the log shows the figures and the autotuner's
// choice. Kernel time must come from CUPTI, and at the seed shape, hot, the
// events+sleep cross-check must sit just above it.
func testGPUFigures(t *testing.T, backend sdk.Backend, d sdk.Description) {
	if d.Device.Kind != "gpu" {
		t.Skip("no GPU here")
	}
	for _, tc := range []struct {
		shape sdk.Shape
		modes []sdk.L2Mode
	}{
		{bridgetest.Shape(1, 8, 8, 512, 512, 64, false, sdk.FP16), []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold}},
		{bridgetest.Shape(1, 8, 8, 512, 512, 64, true, sdk.BF16), []sdk.L2Mode{sdk.L2Hot}},
		{bridgetest.Shape(4, 16, 16, 2048, 2048, 128, false, sdk.FP16), []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold}},
		{bridgetest.Shape(4, 16, 4, 2048, 2048, 128, true, sdk.FP16), []sdk.L2Mode{sdk.L2Hot}},
	} {
		s := tc.shape
		for _, l2 := range tc.modes {
			m := sdk.DefaultMeasurement()
			m.L2 = l2
			started := time.Now()
			out := bridgetest.RunCase(t, backend, bridgetest.NewCase(t, "gpu", "triton", s, 7), &m)
			if out.Skip != nil {
				t.Errorf("%s: skipped: %s", s, out.Skip.Summary)
				continue
			}
			t.Logf("%s %s (%.1f s): config %s: %s", s, l2, time.Since(started).Seconds(),
				out.Prepared.Facts["config"], bridgetest.Figures(out.Samples))
			bridgetest.CheckCUPTI(t, out.Samples)
			if s.SeqQ == 512 && l2 == sdk.L2Hot {
				bridgetest.CheckEventsAboveCUPTI(t, out.Samples)
			}
		}
	}
}
