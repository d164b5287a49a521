package cudav8

import (
	"testing"

	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

// The byte counts are worked out by hand from V8Layout in kernel.cu (see
// the comment of each row), so a change to either side shows up here.
func TestSharedBytesMatchTheKernelLayout(t *testing.T) {
	tests := []struct {
		headDim, tileM, tileN, stages int
		want                          int
	}{
		// Q 48·72·2=6912, K+V 2·2·(32·72·2=4608), S 48·36·4=6912, P 48·40·2=3840, stats 384
		{64, 48, 32, 2, 6912 + 4*4608 + 6912 + 3840 + 384},
		{64, 48, 32, 1, 6912 + 2*4608 + 6912 + 3840 + 384},
		// Q 48·136·2=13056, K+V 4·(32·136·2=8704): 59008 bytes, over the 48 KB default
		{128, 48, 32, 2, 13056 + 4*8704 + 6912 + 3840 + 384},
		// tile_n 64: K+V 4·(64·136·2=17408), S 48·68·4=13056, P 48·72·2=6912
		{128, 48, 64, 2, 13056 + 4*17408 + 13056 + 6912 + 384},
		// tile_m 16, 3 stages: Q 16·72·2=2304, K+V 6·4608, S 16·36·4=2304, P 16·40·2=1280, stats 128
		{64, 16, 32, 3, 2304 + 6*4608 + 2304 + 1280 + 128},
		// the largest: tile_m 64, tile_n 64, 3 stages at D128: Q 64·136·2=17408,
		// K+V 6·17408, S 64·68·4=17408, P 64·72·2=9216, stats 512: 148992, under an H100's 227 KB
		{128, 64, 64, 3, 17408 + 6*17408 + 17408 + 9216 + 512},
	}
	for _, tc := range tests {
		if got := sharedBytes(2, tc.headDim, tc.tileM, tc.tileN, tc.stages); got != tc.want {
			t.Errorf("sharedBytes(D%d, m%d, n%d, s%d) = %d, want %d", tc.headDim, tc.tileM, tc.tileN, tc.stages, got, tc.want)
		}
	}
	if got := sharedBytes(2, 128, 48, 32, 2); got <= 48*1024 {
		t.Errorf("the default D128 configuration uses %d bytes; it is meant to need the >48 KB opt-in", got)
	}
}

func TestPlanGeometry(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 97, SeqK: 131, HeadDim: 128, DType: sdk.FP16, Causal: true}
	l, err := plan(s, map[string]string{tileM: "48", tileN: "64", kvStages: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_fp16_d128_m48_n64_s1" || l.Grid.X != 3 || l.Block.X != 192 ||
		l.DynamicSharedBytes != sharedBytes(2, 128, 48, 64, 1) {
		t.Errorf("plan = %+v", l)
	}
	l, err = plan(s, map[string]string{tileM: "16", tileN: "32", kvStages: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_fp16_d128_m16_n32_s3" || l.Grid.X != 7 || l.Block.X != 64 {
		t.Errorf("plan = %+v", l)
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}
