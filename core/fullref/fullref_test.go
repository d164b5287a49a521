package fullref

import (
	"cmp"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

func startCPU(t *testing.T) *Worker {
	t.Helper()
	python := cmp.Or(os.Getenv("FLASHCORE_PYTHON"), "python3") // the bridges' choice (internal/bridge sits above this package)
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("the bridge's python (%s) cannot import torch: %v %s", python, err, out)
	}
	w, err := Start(python, CPU)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// TestMatchesTheFP64Reference: the fp32 reference (on the CPU here; the
// same script on the GPU) agrees with the fp64 one of core/reference on
// every row, for each mask the dense op knows, GQA, Sq ≠ Sk and rows that
// see no key; and its calibration is that error.
func TestMatchesTheFP64Reference(t *testing.T) {
	w := startCPU(t)
	if w.Device != "cpu" || w.Torch == "" {
		t.Errorf("device %q torch %q", w.Device, w.Torch)
	}
	tests := []struct {
		name  string
		shape sdk.Shape
		mask  mask.Mask
	}{
		{"plain fp16", sdk.Shape{Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 33, SeqK: 33, HeadDim: 16, DType: sdk.FP16}, mask.Plain(false)},
		{"causal top-left, GQA, bf16", sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 40, SeqK: 70, HeadDim: 32, DType: sdk.BF16}, mask.Plain(true)},
		{"causal bottom-right, Sq > Sk: rows with no key", sdk.Shape{Batch: 1, Heads: 2, KVHeads: 1, SeqQ: 50, SeqK: 20, HeadDim: 16, DType: sdk.FP16},
			mask.Mask{Causal: true, Left: -1, Right: -1}},
		{"window and softcap, fp32", sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 64, SeqK: 64, HeadDim: 16, DType: sdk.FP32},
			mask.Mask{TopLeft: true, Left: 5, Right: 3, Softcap: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.shape
			s.Causal = tt.mask.Causal
			tensors := inputs.Generate(7, attention.NewCase(s, op.Normal))
			tensors.Mask = &tt.mask
			out, err := w.Attention(tensors)
			if err != nil || out.Skip != "" {
				t.Fatalf("Attention: %v %q", err, out.Skip)
			}
			rows := reference.Rows(s, op.CheckSettings{FullCheckMaxPairs: math.MaxInt64}, 0)
			var worst float64
			for i, want := range reference.Compute(tensors, rows) {
				at := rows[i].Flat(s) * s.HeadDim
				for col, v := range want {
					worst = max(worst, math.Abs(float64(out.O[at+col])-v))
				}
			}
			if !(worst < 2e-6) {
				t.Errorf("largest error against fp64 over every row %.3g, want < 2e-6", worst)
			}
			if c := Calibrate(tensors, out.O, 8); !(c <= worst) {
				t.Errorf("calibration %.3g, more than the error over every row %.3g", c, worst)
			}
		})
	}
}

// TestCalibrationFindsAWrongReference: a reference off by 1e-3 in one
// element of a calibrated row shows that error.
func TestCalibrationFindsAWrongReference(t *testing.T) {
	w := startCPU(t)
	s := sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 16, SeqK: 16, HeadDim: 16, DType: sdk.FP16}
	tensors := inputs.Generate(3, attention.NewCase(s, op.Normal))
	out, err := w.Attention(tensors)
	if err != nil {
		t.Fatal(err)
	}
	out.O[0] += 1e-3 // row 0, always among the calibration rows
	if c := Calibrate(tensors, out.O, 4); !(c > 9e-4) {
		t.Errorf("calibration %.3g, want about 1e-3", c)
	}
	out.O[1] = float32(math.NaN())
	if c := Calibrate(tensors, out.O, 4); !math.IsInf(c, 1) {
		t.Errorf("calibration of a NaN reference %.3g, want +Inf", c)
	}
}

// TestAFailedWorkerSaysWhy: a Python without torch, or one that is not
// there, gives an error that names what went wrong.
func TestAFailedWorkerSaysWhy(t *testing.T) {
	if _, err := Start("/nonexistent/python3", CPU); err == nil {
		t.Error("a missing interpreter started")
	}
}
