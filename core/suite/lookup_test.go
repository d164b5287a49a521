package suite

import (
	"slices"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func TestLookups(t *testing.T) {
	s := &Suite{
		Cases: []op.Case{{ID: "a"}, {ID: "b"}},
		Backends: []BackendSelection{{Name: "triton", Variants: []string{"triton"},
			Tunables: map[string][]string{"BLOCK_M": {"64", "128"}}}},
		L2Modes:     []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold},
		Measurement: sdk.Measurement{L2: sdk.L2Hot},
	}
	if c, ok := s.Case("b"); !ok || c.ID != "b" {
		t.Errorf("Case(b) = %q, %v", c.ID, ok)
	}
	if _, ok := s.Case("c"); ok {
		t.Error("Case(c) found a case the suite does not have")
	}
	sel := s.Selection("triton")
	if sel.Variants != nil || len(sel.Tunables["BLOCK_M"]) != 2 || len(s.Backends[0].Variants) != 1 {
		t.Errorf("Selection(triton) = %+v: want the tunables kept, the variants empty, the suite's untouched", sel)
	}
	if sel := s.Selection("cuda-v8"); sel.Name != "cuda-v8" || sel.Tunables != nil {
		t.Errorf("Selection(cuda-v8) = %+v: want a bare selection", sel)
	}
	cold := s.OnlyL2(sdk.L2Cold)
	if !slices.Equal(cold.L2Modes, []sdk.L2Mode{sdk.L2Cold}) || cold.Measurement.L2 != sdk.L2Cold || len(s.L2Modes) != 2 {
		t.Errorf("OnlyL2(cold) = %v, %v; the suite's modes are now %v", cold.L2Modes, cold.Measurement.L2, s.L2Modes)
	}
}
