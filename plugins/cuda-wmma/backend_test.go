package cudawmma

import (
	"slices"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

func TestPlanGeometry(t *testing.T) {
	tests := []struct {
		seqQ  int
		warps string
		name  string
		tiles int
	}{
		{64, "4", "attn_fwd_bf16_d128_warps4_n32", 1},
		{65, "4", "attn_fwd_bf16_d128_warps4_n32", 2},
		{257, "8", "attn_fwd_bf16_d128_warps8_n32", 3},
		{33, "1", "attn_fwd_bf16_d128_warps1_n32", 3},
	}
	for _, tc := range tests {
		s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 1, SeqQ: tc.seqQ, SeqK: 5, HeadDim: 128, DType: sdk.BF16}
		l, err := plan(s, map[string]string{warpsPerBlock: tc.warps, tileN: "32"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Function != tc.name || l.Grid.X != tc.tiles || l.Block.X%32 != 0 || l.DynamicSharedBytes != 0 {
			t.Errorf("plan(Sq %d, warps %s) = %+v, want %s with %d tiles", tc.seqQ, tc.warps, l, tc.name, tc.tiles)
		}
		if rows := 16 * l.Block.X / 32; rows*l.Grid.X < tc.seqQ {
			t.Errorf("plan(Sq %d): %d rows per block x %d tiles does not cover every row", tc.seqQ, rows, l.Grid.X)
		}
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}

// The backward is two kernels in one call: dK and dV over key blocks of
// each key/value head, then dQ over query blocks of each head, both given
// the mode's tensors in order and then heads, kv_heads, seq_q, seq_k,
// causal and the scale.
func TestBackwardPlanGeometry(t *testing.T) {
	tests := []struct {
		shape      sdk.Shape
		dkdv, dq   string
		dkdvGrid   gpu.Dim3
		dqGrid     gpu.Dim3
		dkdvThread int
	}{
		{sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 300, SeqK: 500, HeadDim: 64, DType: sdk.FP16, Causal: true},
			"attn_bwd_fp16_d64_dkdv_k64_q32", "attn_bwd_fp16_d64_dq_q64_k32", gpu.Dim3{X: 8, Y: 2, Z: 1}, gpu.Dim3{X: 5, Y: 4, Z: 1}, 128},
		{sdk.Shape{Batch: 2, Heads: 4, KVHeads: 4, SeqQ: 256, SeqK: 256, HeadDim: 128, DType: sdk.BF16},
			"attn_bwd_bf16_d128_dkdv_k32_q32", "attn_bwd_bf16_d128_dq_q64_k32", gpu.Dim3{X: 8, Y: 4, Z: 2}, gpu.Dim3{X: 4, Y: 4, Z: 2}, 64},
		{sdk.Shape{Batch: 1, Heads: 3, KVHeads: 1, SeqQ: 1, SeqK: 200, HeadDim: 64, DType: sdk.BF16},
			"attn_bwd_bf16_d64_dkdv_k64_q32", "attn_bwd_bf16_d64_dq_q64_k32", gpu.Dim3{X: 4, Y: 1, Z: 1}, gpu.Dim3{X: 1, Y: 3, Z: 1}, 128},
	}
	for _, tc := range tests {
		tc.shape.Mode = sdk.Backward
		c := cudatest.OpCaseOf(attention.NewCase(tc.shape, op.Normal))
		l, err := planBackward(c, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.shape, err)
		}
		if l.Function != tc.dkdv || l.Grid != tc.dkdvGrid || l.Block.X != tc.dkdvThread || len(l.Then) != 1 ||
			l.Then[0].Function != tc.dq || l.Then[0].Grid != tc.dqGrid || l.Then[0].Block.X != 128 {
			t.Errorf("%s: planned %+v", tc.shape, l)
			continue
		}
		var names []string
		for _, p := range l.Params[:9] {
			names = append(names, p.Buffer)
		}
		scalars := []gpu.Arg{gpu.Int32(int32(tc.shape.Heads)), gpu.Int32(int32(tc.shape.KVHeads)), gpu.Int32(int32(tc.shape.SeqQ)),
			gpu.Int32(int32(tc.shape.SeqK)), gpu.Int32(map[bool]int32{false: 0, true: 1}[tc.shape.Causal]), gpu.Float32(float32(tc.shape.Scale()))}
		var values []gpu.Arg
		for _, p := range l.Params[9:] {
			values = append(values, p.Value)
		}
		if want := []string{"q", "k", "v", "o", "do", "lse", "dq", "dk", "dv"}; !slices.Equal(names, want) || !slices.Equal(values, scalars) ||
			!slices.EqualFunc(l.Params, l.Then[0].Params, func(a, b cudakit.Param) bool { return a == b }) {
			t.Errorf("%s: params %+v, want %v then %v, the same for both kernels", tc.shape, l.Params, want, scalars)
		}
	}
	if _, err := planBackward(cudatest.OpCaseOf(attention.NewCase(sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 8, SeqK: 8, HeadDim: 96, DType: sdk.FP16, Mode: sdk.Backward}, op.Normal)), nil); err == nil {
		t.Error("head dim 96 was planned")
	}
}
