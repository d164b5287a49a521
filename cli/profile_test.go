package cli

import (
	"maps"
	"testing"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

// profile finds a row the suite labels by its tunables, as run labels it,
// and selects that row alone.
func TestRowByLabel(t *testing.T) {
	variants := []sdk.Variant{{Name: "cuda-hopper", Tunables: []sdk.Tunable{
		{Name: "producer", Values: []string{"wait", "ahead", "tma"}, Default: "tma"},
		{Name: "kernel", Values: []string{"auto", "wgmma", "split"}, Default: "auto"},
	}}}
	sel := suite.BackendSelection{Name: "cuda-hopper", Tunables: map[string][]string{
		"kernel": {"wgmma"}, "producer": {"ahead", "tma"}}}
	tests := []struct {
		label string
		want  map[string]string // nil: not found
	}{
		{"cuda-hopper[kernel=wgmma,producer=tma]", map[string]string{"kernel": "wgmma", "producer": "tma"}},
		{"cuda-hopper[kernel=wgmma,producer=ahead]", map[string]string{"kernel": "wgmma", "producer": "ahead"}},
		{"cuda-hopper[kernel=wgmma,producer=wait]", nil}, // not a row of this suite
		{"cuda-hopper[producer=tma,kernel=wgmma]", nil},  // not how rows are labelled
	}
	for _, tc := range tests {
		got, ok := rowByLabel(variants, sel, tc.label)
		switch {
		case tc.want == nil && ok:
			t.Errorf("%s: found %+v", tc.label, got)
		case tc.want != nil && (!ok || len(got.Configs) != 1 || !maps.Equal(got.Configs[0], tc.want) ||
			len(got.Variants) != 1 || got.Variants[0] != "cuda-hopper" || got.Tunables != nil):
			t.Errorf("%s: %+v, %v; want the row %v alone", tc.label, got, ok, tc.want)
		}
	}
}
