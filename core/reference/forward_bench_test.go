package reference

import (
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// BenchmarkComputeForward is the whole forward the backward modes start
// from, at B1 H2 S2048 D128: 2·2048²·128·4 = 4.3 GFLOP of fp64.
func BenchmarkComputeForward(b *testing.B) {
	s := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.FP16, Mode: sdk.Backward}
	t := inputs.Generate(1, attention.NewCase(s, op.Normal))
	b.ResetTimer()
	for range b.N {
		ComputeForward(t)
	}
	b.ReportMetric(float64(b.N)*2*2048*2048*128*4/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
