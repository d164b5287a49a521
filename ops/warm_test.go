package ops

import (
	"slices"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// TestWarmReference: what WarmReference computes ahead is what Check
// compares with, bit for bit, for a case whose check takes every row;
// a case whose check samples rows, and a backward case, are left to
// Check.
func TestWarmReference(t *testing.T) {
	o, _ := Lookup(attention.Name)
	caseOf := func(s sdk.Shape) op.Case {
		p := Complete(o, attention.ParamsOf(s))
		return op.Case{ID: o.CaseID(p, op.Normal), Op: attention.Name, Params: p}
	}
	every := op.DefaultCheckSettings()
	sampling := every
	sampling.FullCheckMaxPairs, sampling.SampledRows = 1, 8
	small := sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 33, SeqK: 70, HeadDim: 64, Causal: true, DType: sdk.BF16}
	backward := small
	backward.Mode = sdk.Backward
	tests := []struct {
		name     string
		c        op.Case
		settings op.CheckSettings
		want     bool
	}{
		{"every row checked", caseOf(small), every, true},
		{"rows sampled", caseOf(small), sampling, false},
		{"backward", caseOf(backward), every, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warm := o.Generate(11, tt.c)
			if got := WarmReference(tt.c, warm, tt.settings, 3); got != tt.want {
				t.Fatalf("WarmReference = %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			kept := tensorsOf(tt.c, warm)
			rows := reference.Rows(kept.Shape, tt.settings, 0)
			cold := tensorsOf(tt.c, o.Generate(11, tt.c))
			for i, want := range reference.Compute(cold, rows) {
				got, ok := kept.Reference(rows[i].Flat(kept.Shape))
				if !ok || !slices.Equal(got, want) {
					t.Fatalf("row %d: kept %v (%v), want the reference Check computes", i, ok, len(got))
				}
			}
			// And the check of an output against the warmed inputs is
			// the check against cold ones.
			output := make([]byte, kept.Shape.QElements()*kept.Shape.DType.Size())
			a := check.Check(kept, output, tt.settings, op.DefaultTolerances()[sdk.BF16])
			b := check.Check(cold, output, tt.settings, op.DefaultTolerances()[sdk.BF16])
			if a.Verdict != b.Verdict || a.MaxAbsErr != b.MaxAbsErr || a.Reason != b.Reason {
				t.Errorf("warmed check %+v, cold check %+v", a, b)
			}
		})
	}
}
