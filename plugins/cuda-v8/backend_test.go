package main

import (
	"testing"

	"github.com/flashcore/bench/internal/cudabackend/cudatest"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

// The byte counts are worked out by hand from V8Layout in kernel.cu (see
// the comment of each row), so a change to either side shows up here.
func TestSharedBytesMatchTheKernelLayout(t *testing.T) {
	tests := []struct {
		headDim, tileN, stages int
		want                   int
	}{
		// Q 48·72·2=6912, K+V 2·2·(32·72·2=4608), S 48·36·4=6912, P 48·40·2=3840, stats 384
		{64, 32, 2, 6912 + 4*4608 + 6912 + 3840 + 384},
		{64, 32, 1, 6912 + 2*4608 + 6912 + 3840 + 384},
		// Q 48·136·2=13056, K+V 4·(32·136·2=8704): 59008 bytes, over the 48 KB default
		{128, 32, 2, 13056 + 4*8704 + 6912 + 3840 + 384},
		// tile_n 64: K+V 4·(64·136·2=17408), S 48·68·4=13056, P 48·72·2=6912
		{128, 64, 2, 13056 + 4*17408 + 13056 + 6912 + 384},
	}
	for _, tc := range tests {
		if got := sharedBytes(2, tc.headDim, tc.tileN, tc.stages); got != tc.want {
			t.Errorf("sharedBytes(D%d, n%d, s%d) = %d, want %d", tc.headDim, tc.tileN, tc.stages, got, tc.want)
		}
	}
	if got := sharedBytes(2, 128, 32, 2); got <= 48*1024 {
		t.Errorf("the default D128 configuration uses %d bytes; it is meant to need the >48 KB opt-in", got)
	}
}

func TestPlanGeometry(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 97, SeqK: 131, HeadDim: 128, DType: sdk.FP16, Causal: true}
	l, err := plan(s, map[string]string{tileN: "64", kvStages: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_fp16_d128_n64_s1" || l.Grid.X != 3 || l.Block.X != 192 ||
		l.DynamicSharedBytes != sharedBytes(2, 128, 64, 1) {
		t.Errorf("plan = %+v", l)
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}
