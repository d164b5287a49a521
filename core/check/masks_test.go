package check

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// maskedTensors are the inputs of an attention case with mask axes set.
func maskedTensors(s sdk.Shape, axes ...string) *inputs.Tensors {
	p := attention.ParamsOf(s)
	for i := 0; i+1 < len(axes); i += 2 {
		p[axes[i]] = axes[i+1]
	}
	return inputs.Generate(99, op.Case{ID: attention.CaseIDOf(p, op.Normal), Op: attention.Name, Params: p, Distribution: op.Normal})
}

// under is t's inputs with another mask: what a kernel that applies m
// computes. It keeps none of t's reference rows, which are t's mask's.
func under(t *inputs.Tensors, m mask.Mask) *inputs.Tensors {
	return &inputs.Tensors{Shape: t.Shape, Q: t.Q, K: t.K, V: t.V, DO: t.DO, SHA256: t.SHA256, Mask: &m}
}

// TestMaskedOutputs: the reference of a masked case passes; the output
// of a kernel that aligns the mask wrongly or ignores the window fails,
// and so does one that writes the rows that see no key (Sq > Sk,
// bottom-right) as anything but zeros, which the bound alone shows.
func TestMaskedOutputs(t *testing.T) {
	chunk := sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 48, SeqK: 160, HeadDim: 32, Causal: true, DType: sdk.FP16}
	tall := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 96, SeqK: 64, HeadDim: 32, Causal: true, DType: sdk.BF16}
	bottomRight := maskedTensors(chunk, "causal_align", "bottom-right")
	window := maskedTensors(chunk, "causal_align", "bottom-right", "window_left", "16")
	capped := maskedTensors(chunk, "softcap", "2")
	tallBottomRight := maskedTensors(tall, "causal_align", "bottom-right")
	for _, tc := range []*inputs.Tensors{bottomRight, window, capped, tallBottomRight} {
		dtype := tc.Shape.DType
		if r := Check(tc, inputs.Encode(dtype, correctOutput(tc)), settings, tolerances[dtype]); r.Verdict != Pass || r.OutOfRange != 0 {
			t.Errorf("%v %+v: the reference fails: %+v", tc.Shape, *tc.Mask, r)
		}
	}
	topLeft := bottomRight.Masking()
	topLeft.TopLeft = true
	noWindow := window.Masking()
	noWindow.Left = -1
	noCap := capped.Masking()
	noCap.Softcap = 0
	tallTopLeft := tallBottomRight.Masking()
	tallTopLeft.TopLeft = true
	for _, tc := range []struct {
		name   string
		t      *inputs.Tensors
		wrong  mask.Mask
		reason string
	}{
		{"top-left where bottom-right is asked", bottomRight, topLeft, ""},
		{"the window ignored", window, noWindow, ""},
		{"the softcap ignored", capped, noCap, ""},
		{"rows that see no key not zeros", tallBottomRight, tallTopLeft, "outside the range of V over the keys their row sees"},
	} {
		dtype := tc.t.Shape.DType
		r := Check(tc.t, inputs.Encode(dtype, correctOutput(under(tc.t, tc.wrong))), settings, tolerances[dtype])
		if r.Verdict != Fail || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: %+v, want FAIL (%q)", tc.name, r, tc.reason)
		}
	}
}

// TestBoundSlidesWithTheWindow: the bound of a windowed row is the range
// of V over the window's keys alone. V is 0 on every key but the first,
// which is 1000, so that only the rows whose window holds key 0 may
// exceed 0: an output of 1 on a row past it lies outside.
func TestBoundSlidesWithTheWindow(t *testing.T) {
	s := sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 8, SeqK: 8, HeadDim: 1, Causal: true, DType: sdk.FP32}
	m := mask.Mask{Causal: true, TopLeft: true, Left: 2, Right: -1}
	v := make([]float64, 8)
	v[0] = 1000
	tensors := &inputs.Tensors{Shape: s, Q: inputs.Encode(s.DType, make([]float64, 8)), K: inputs.Encode(s.DType, make([]float64, 8)),
		V: inputs.Encode(s.DType, v), Mask: &m}
	out := make([]float64, 8)
	for i := range 3 {
		out[i] = 1000 / float64(i+1) // rows 0..2 see key 0
	}
	tol := tolerances[sdk.FP32]
	if found := boundViolations(tensors, inputs.Encode(s.DType, out), tol); found.count != 0 {
		t.Errorf("the exact output has %d elements out of range: first %+v", found.count, found.first)
	}
	out[3] = 1
	found := boundViolations(tensors, inputs.Encode(s.DType, out), tol)
	if found.count != 1 || found.first.row != 3 || found.first.lo != 0 || found.first.hi != 0 {
		t.Errorf("row 3, whose window is keys 1..3, at 1: %+v, want one element out of [0, 0] at row 3", found)
	}
}
