package check

import (
	"math"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

func TestDiff(t *testing.T) {
	base := []float64{1, -2, 0.5, 0, 3}
	nextUp := func(dtype sdk.DType, x float64) float64 {
		b := inputs.Encode(dtype, []float64{x})
		b[0]++ // one step of the mantissa, little-endian
		return inputs.Decode(dtype, b)[0]
	}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		a := inputs.Encode(dtype, base)
		if d := Diff(a, a, dtype); d != (RunDiff{}) {
			t.Errorf("%s: identical outputs differ: %+v", dtype, d)
		}
		moved := append([]float64(nil), base...)
		moved[0] = nextUp(dtype, 1)
		moved[1] = -2.5
		d := Diff(a, inputs.Encode(dtype, moved), dtype)
		wantAbs := 0.5
		if d.Elements != 2 || d.MaxAbs != wantAbs || d.MaxULPs < 2 {
			t.Errorf("%s: got %+v, want 2 elements, max |diff| 0.5", dtype, d)
		}
		wantL2 := math.Sqrt((0.25 + (moved[0]-1)*(moved[0]-1)) / (1 + 4 + 0.25 + 9))
		if math.Abs(d.RelL2-wantL2) > 1e-12 {
			t.Errorf("%s: rel L2 %g, want %g", dtype, d.RelL2, wantL2)
		}
		withNaN := append([]float64(nil), base...)
		withNaN[2] = math.NaN()
		b := inputs.Encode(dtype, withNaN)
		if d := Diff(a, b, dtype); d.Elements != 1 || d.MaxAbs != 0 || math.IsNaN(d.RelL2) {
			t.Errorf("%s: a NaN counts as differing and leaves the figures finite: %+v", dtype, d)
		}
		if !NonFinite(b, dtype) || NonFinite(a, dtype) {
			t.Errorf("%s: NonFinite wrong", dtype)
		}
	}
}

func TestULPsAcrossZero(t *testing.T) {
	l := layoutOf(sdk.FP16)
	if got := l.ulps(0x0001, 0x8001); got != 2 {
		t.Errorf("smallest subnormals of either sign: %d ULPs, want 2", got)
	}
	if got := l.ulps(0x0000, 0x8000); got != 0 {
		t.Errorf("+0 and -0: %d ULPs, want 0", got)
	}
}
