package ops

import (
	"fmt"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// attentionOp binds attention forward's declaration (package attention)
// to its generator (core/inputs), reference and check (core/reference,
// core/check) and work model (core/stats).
type attentionOp struct{}

func (attentionOp) Spec() op.Spec { return attention.Spec }

func (attentionOp) Validate(p op.Params) (string, string) {
	s := attention.ShapeFrom(p)
	if s.KVHeads > 0 && s.Heads%s.KVHeads != 0 {
		return "kv_heads", fmt.Sprintf("%d does not divide heads = %d (each key/value head serves heads/kv_heads query heads)", s.KVHeads, s.Heads)
	}
	// The reference backward and every backend's backward know top-left
	// causal alone.
	if axis := attention.MaskedAxis(p); axis != "" && s.Mode.Or() != sdk.Forward {
		return axis, fmt.Sprintf("%s = %s applies to mode fwd alone, not %s: the backward modes take causal (top-left) and no other mask",
			axis, p[axis], s.Mode)
	}
	return "", ""
}

func (attentionOp) CaseID(p op.Params, dist op.Distribution) string {
	return attention.CaseIDOf(p, dist)
}

func (attentionOp) Label(p op.Params) string { return attention.LabelOf(p) }

func (attentionOp) Generate(seed uint64, c op.Case) *op.Inputs {
	t := inputs.Generate(seed, c)
	s := t.Shape
	qDims := []int{s.Batch, s.Heads, s.SeqQ, s.HeadDim}
	kvDims := []int{s.Batch, s.KVHeads, s.SeqK, s.HeadDim}
	tensors := []op.TensorData{
		{Name: "q", DType: s.DType, Dims: qDims, Data: t.Q},
		{Name: "k", DType: s.DType, Dims: kvDims, Data: t.K},
		{Name: "v", DType: s.DType, Dims: kvDims, Data: t.V},
	}
	switch s.Mode.Or() {
	case sdk.Forward:
		return &op.Inputs{SHA256: t.SHA256, Tensors: tensors, Private: t}
	case sdk.Backward:
		// O and LSE are the exact forward's, rounded as a backend gets
		// them; the reference backward reads them rounded too.
		exact := reference.ComputeForward(t)
		o := inputs.Encode(s.DType, exact.O)
		lse := inputs.Encode(sdk.FP32, exact.LSE)
		tensors = append(tensors,
			op.TensorData{Name: "o", DType: s.DType, Dims: qDims, Data: o},
			op.TensorData{Name: "do", DType: s.DType, Dims: qDims, Data: t.DO},
			op.TensorData{Name: "lse", DType: sdk.FP32, Dims: []int{s.Batch, s.Heads, s.SeqQ}, Data: lse})
		in := op.NewInputs(tensors...)
		in.Private = &backwardCase{t: t, gradients: reference.NewGradients(t, inputs.Decode(s.DType, o), inputs.Decode(sdk.FP32, lse))}
		return in
	default: // fwd+bwd: each backend computes its own O and LSE
		exact := reference.ComputeForward(t)
		tensors = append(tensors, op.TensorData{Name: "do", DType: s.DType, Dims: qDims, Data: t.DO})
		in := op.NewInputs(tensors...)
		in.Private = &backwardCase{t: t, gradients: reference.NewGradients(t, exact.O, exact.LSE)}
		return in
	}
}

// backwardCase is what Generate keeps of a backward case for its check:
// the forward inputs and the reference backward, whose O and LSE took the
// whole forward to compute.
type backwardCase struct {
	t         *inputs.Tensors
	gradients *reference.Gradients
}

// tensorsOf is the core's view of an attention case's inputs.
func tensorsOf(c op.Case, in *op.Inputs) *inputs.Tensors {
	switch private := in.Private.(type) {
	case *inputs.Tensors:
		return private
	case *backwardCase:
		return private.t
	}
	m := attention.MaskOf(c.Params)
	return &inputs.Tensors{Shape: attention.ShapeOf(c), Q: in.Tensor("q").Data, K: in.Tensor("k").Data,
		V: in.Tensor("v").Data, SHA256: in.SHA256, Mask: &m}
}

// gradientsOf is the reference backward of a backward case's inputs,
// computed again when in did not come from Generate.
func gradientsOf(c op.Case, in *op.Inputs) *reference.Gradients {
	if private, ok := in.Private.(*backwardCase); ok {
		return private.gradients
	}
	t := tensorsOf(c, in)
	t.DO = in.Tensor("do").Data
	if o, lse := in.Tensor("o"), in.Tensor("lse"); o != nil && lse != nil {
		return reference.NewGradients(t, inputs.Decode(o.DType, o.Data), inputs.Decode(lse.DType, lse.Data))
	}
	exact := reference.ComputeForward(t)
	return reference.NewGradients(t, exact.O, exact.LSE)
}

// Check holds each output of the case's mode to its tolerance: o to the
// forward check, dq, dk and dv to the reference backward
// (check.CheckGradients).
func (attentionOp) Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report {
	switch attention.ShapeOf(c).Mode.Or() {
	case sdk.Forward:
		return []check.Report{check.Check(tensorsOf(c, in), outputs[0], settings, tols[0])}
	case sdk.Backward:
		g := check.CheckGradients(gradientsOf(c, in), check.Gradients{DQ: outputs[0], DK: outputs[1], DV: outputs[2]},
			settings, check.GradientTolerances{DQ: tols[0], DK: tols[1], DV: tols[2]})
		return g[:]
	default:
		forward := check.Check(tensorsOf(c, in), outputs[0], settings, tols[0])
		g := check.CheckGradients(gradientsOf(c, in), check.Gradients{DQ: outputs[1], DK: outputs[2], DV: outputs[3]},
			settings, check.GradientTolerances{DQ: tols[1], DK: tols[2], DV: tols[3]})
		return []check.Report{forward, g[0], g[1], g[2]}
	}
}

// warmReference computes the forward's reference of every row, where the
// check samples none (referenceWarmer).
func (attentionOp) warmReference(c op.Case, in *op.Inputs, settings op.CheckSettings, workers int) bool {
	if attention.ShapeOf(c).Mode.Or() != sdk.Forward {
		return false
	}
	t := tensorsOf(c, in)
	if reference.Sampled(t.Shape, settings) {
		return false
	}
	reference.Warm(t, reference.Rows(t.Shape, settings, 0), workers)
	return true
}

func (attentionOp) Work(c op.Case, _ *op.Inputs) op.Work {
	s := attention.ShapeOf(c)
	return op.Work{FLOPs: attention.FLOPs(s, attention.MaskOf(c.Params)), Bytes: attention.Bytes(s)}
}

// Unsupported holds the shape to the capabilities (sdk.Capabilities.Unsupported),
// then the masks beyond causal (mask.Mask.UnsupportedDense).
func (attentionOp) Unsupported(caps sdk.Capabilities, p op.Params) string {
	s := attention.ShapeFrom(p)
	if reason := caps.Unsupported(s); reason != "" {
		return reason
	}
	return attention.MaskOf(p).UnsupportedDense(caps, s.SeqQ, s.SeqK)
}

func (attentionOp) shape(c op.Case) sdk.Shape { return attention.ShapeOf(c) }

func (attentionOp) files(inputs, outputs []sdk.TensorFile) sdk.Tensors {
	return sdk.Tensors{Q: inputs[0].Path, K: inputs[1].Path, V: inputs[2].Path, Output: outputs[0].Path}
}

func (attentionOp) Facet(p op.Params) op.Facet { return attention.Facet(p) }

func (attentionOp) WorkNote(p op.Params) string { return attention.WorkNote(p) }
