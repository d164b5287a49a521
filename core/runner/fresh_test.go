package runner

import (
	"runtime"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func attentionCase(s sdk.Shape) op.Case {
	o, _ := ops.Lookup(attention.Name)
	p := ops.Complete(o, attention.ParamsOf(s))
	return op.Case{ID: o.CaseID(p, op.Normal), Op: attention.Name, Params: p}
}

// TestFreshInputsAhead: a GPU row's fresh inputs, with their reference,
// are made while it samples where the case is small (the seed shape,
// twice that), never a large case's (the llm suite's B16 H16 S512 D128,
// whose reference on a quarter of the cores outlasted the Run by
// seconds); a CPU row's afterwards, since its samples are the host's
// CPUs' time.
func TestFreshInputsAhead(t *testing.T) {
	seed := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}
	twice := seed
	twice.Batch = 2
	four := seed
	four.Batch = 4
	llm := sdk.Shape{Batch: 16, Heads: 16, KVHeads: 16, SeqQ: 512, SeqK: 512, HeadDim: 128, DType: sdk.FP16}
	tests := []struct {
		name  string
		shape sdk.Shape
		small bool
	}{
		{"seed shape", seed, true},
		{"twice the seed shape", twice, true},
		{"four times", four, false},
		{"llm B16 H16 S512 D128", llm, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := attentionCase(tt.shape)
			if got := smallForAhead(c); got != tt.small {
				t.Errorf("smallForAhead = %v, want %v", got, tt.small)
			}
			if freshAhead(c, sdk.Device{Kind: "cpu"}, max(runtime.NumCPU(), freshOverlapCores)) {
				t.Error("a CPU row's fresh inputs made ahead; want them made after its samples")
			}
		})
	}
}
