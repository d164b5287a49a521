package ops

import (
	"fmt"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
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
	return "", ""
}

func (attentionOp) CaseID(p op.Params, dist op.Distribution) string {
	return attention.CaseID(attention.ShapeFrom(p), dist)
}

func (attentionOp) Label(p op.Params) string { return attention.ShapeFrom(p).String() }

func (attentionOp) Generate(seed uint64, c op.Case) *op.Inputs {
	t := inputs.Generate(seed, c)
	s := t.Shape
	qDims := []int{s.Batch, s.Heads, s.SeqQ, s.HeadDim}
	kvDims := []int{s.Batch, s.KVHeads, s.SeqK, s.HeadDim}
	return &op.Inputs{SHA256: t.SHA256, Tensors: []op.TensorData{
		{Name: "q", DType: s.DType, Dims: qDims, Data: t.Q},
		{Name: "k", DType: s.DType, Dims: kvDims, Data: t.K},
		{Name: "v", DType: s.DType, Dims: kvDims, Data: t.V},
	}}
}

// tensorsOf is the core's view of an attention case's inputs.
func tensorsOf(c op.Case, in *op.Inputs) *inputs.Tensors {
	return &inputs.Tensors{Shape: attention.ShapeOf(c), Q: in.Tensor("q").Data, K: in.Tensor("k").Data,
		V: in.Tensor("v").Data, SHA256: in.SHA256}
}

func (attentionOp) Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report {
	return []check.Report{check.Check(tensorsOf(c, in), outputs[0], settings, tols[0])}
}

func (attentionOp) Work(c op.Case, _ *op.Inputs) op.Work {
	s := attention.ShapeOf(c)
	return op.Work{FLOPs: attention.FLOPs(s), Bytes: attention.Bytes(s)}
}

func (attentionOp) Unsupported(caps sdk.Capabilities, p op.Params) string {
	return caps.Unsupported(attention.ShapeFrom(p))
}

func (attentionOp) shape(c op.Case) sdk.Shape { return attention.ShapeOf(c) }

func (attentionOp) files(inputs, outputs []sdk.TensorFile) sdk.Tensors {
	return sdk.Tensors{Q: inputs[0].Path, K: inputs[1].Path, V: inputs[2].Path, Output: outputs[0].Path}
}

func (attentionOp) Facet(p op.Params) op.Facet { return attention.Facet(p) }
