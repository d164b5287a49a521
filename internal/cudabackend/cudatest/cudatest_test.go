package cudatest

import (
	"testing"

	"github.com/flashcore/bench/sdk"
)

func TestFlopsCountsUnmaskedPairs(t *testing.T) {
	s := sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 4, SeqK: 2, HeadDim: 1, Causal: true}
	if got := flops(s); got != 4*(1+2+2+2) {
		t.Errorf("flops = %v, want 28", got)
	}
}
