package main

import (
	"testing"

	"github.com/flashcore/bench/internal/cudabackend/cudatest"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

func TestPlanGeometry(t *testing.T) {
	tests := []struct {
		seqQ  int
		rows  string
		name  string
		tiles int
	}{
		{64, "8", "attn_fwd_fp16_d64_rows8", 8},
		{77, "8", "attn_fwd_fp16_d64_rows8", 10},
		{77, "16", "attn_fwd_fp16_d64_rows16", 5},
		{1, "4", "attn_fwd_fp16_d64_rows4", 1},
	}
	for _, tc := range tests {
		s := sdk.Shape{Batch: 3, Heads: 5, KVHeads: 5, SeqQ: tc.seqQ, SeqK: 9, HeadDim: 64, DType: sdk.FP16}
		l, err := plan(s, map[string]string{rowsPerBlock: tc.rows})
		if err != nil {
			t.Fatal(err)
		}
		if l.Function != tc.name || l.Grid.X != tc.tiles || l.Grid.Y != 5 || l.Grid.Z != 3 || l.DynamicSharedBytes != 0 {
			t.Errorf("plan(Sq %d, rows %s) = %+v, want %s with %d tiles", tc.seqQ, tc.rows, l, tc.name, tc.tiles)
		}
		if rows := l.Block.X / 32; l.Block.X%32 != 0 || rows*l.Grid.X < tc.seqQ {
			t.Errorf("plan(Sq %d, rows %s): block %+v x %d tiles does not cover every row", tc.seqQ, tc.rows, l.Block, l.Grid.X)
		}
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}
