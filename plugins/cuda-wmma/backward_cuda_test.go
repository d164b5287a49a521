//go:build cuda

package cudawmma

import (
	"testing"

	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// backwardCases are the backward's own cases: GQA with Sq < Sk under the
// causal mask and odd lengths, D128 in bf16, and a long fp16 row count
// that leaves a partial last tile in both kernels.
func backwardCases() []op.Case {
	shapes := []sdk.Shape{
		{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 300, SeqK: 500, HeadDim: 64, DType: sdk.FP16, Causal: true},
		{Batch: 1, Heads: 4, KVHeads: 4, SeqQ: 256, SeqK: 256, HeadDim: 128, DType: sdk.BF16},
		{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 1000, SeqK: 1000, HeadDim: 64, DType: sdk.FP16},
	}
	cases := make([]op.Case, len(shapes))
	for i, s := range shapes {
		s.Mode = sdk.Backward
		cases[i] = attention.NewCase(s, op.Normal)
	}
	return cases
}

// Mode bwd in process, each case checked by the op's own check (dQ on
// query rows, dK and dV on key rows against the fp64 reference backward,
// and dV's column sums), repeated bit-identically, then timed.
func TestBackwardOnGPU(t *testing.T) {
	cudatest.CheckOp(t, New(), backwardCases())
}

// The conformance kit's edge shapes (odd lengths, GQA, Sq ≠ Sk, causal
// rows past the keys, one query row) in mode bwd, in both dtypes and head
// dims.
func TestBackwardEdgesOnGPU(t *testing.T) {
	cudatest.CheckOp(t, New(), cudatest.ModeCases(spec().Variant, sdk.Backward))
}
