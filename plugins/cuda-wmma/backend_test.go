package cudawmma

import (
	"testing"

	"github.com/flashcore/bench/cudakit/cudatest"
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
