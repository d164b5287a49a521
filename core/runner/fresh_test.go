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

// TestFreshInputsAhead: a GPU row's fresh inputs are made while it
// samples, their reference too where it is small (the seed shape, twice
// that), never a large case's (the llm suite's B16 H16 S512 D128, whose
// reference on a quarter of the cores outlasted the Run by seconds); a
// CPU row's afterwards, since its samples are the host's CPUs' time.
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
		warm  bool
	}{
		{"seed shape", seed, true},
		{"twice the seed shape", twice, true},
		{"four times", four, false},
		{"llm B16 H16 S512 D128", llm, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := attentionCase(tt.shape)
			if got := warmAhead(c); got != tt.warm {
				t.Errorf("warmAhead = %v, want %v", got, tt.warm)
			}
			if overlap, warm := freshPlan(c, sdk.Device{Kind: "cpu"}, max(runtime.NumCPU(), freshOverlapCores)); overlap || warm {
				t.Errorf("a CPU row: freshPlan = %v, %v; want its fresh inputs made after its samples", overlap, warm)
			}
		})
	}
}
