package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

// profile finds a row the suite labels by its tunables, as run labels it
// or by a part of them in any order, and selects that row alone; a label
// that fits several rows is ambiguous, and one that fits none lists the
// variant's rows.
func TestRowByLabel(t *testing.T) {
	variants := []sdk.Variant{{Name: "cuda-hopper", Tunables: []sdk.Tunable{
		{Name: "producer", Values: []string{"wait", "ahead", "tma"}, Default: "tma"},
		{Name: "kernel", Values: []string{"auto", "wgmma", "split"}, Default: "auto"},
		{Name: "kv_stages", Values: []string{"2", "3"}, Default: "3"},
	}}}
	sel := suite.BackendSelection{Name: "cuda-hopper", Tunables: map[string][]string{
		"kernel": {"wgmma"}, "producer": {"ahead", "tma"}}}
	rows := []string{"cuda-hopper[kernel=wgmma,producer=ahead]", "cuda-hopper[kernel=wgmma,producer=tma]"}
	tests := []struct {
		label     string
		want      map[string]string // nil: not found
		ambiguous bool
		rows      []string // when not found
	}{
		{label: "cuda-hopper[kernel=wgmma,producer=tma]", want: map[string]string{"kernel": "wgmma", "producer": "tma"}},
		{label: "cuda-hopper[kernel=wgmma,producer=ahead]", want: map[string]string{"kernel": "wgmma", "producer": "ahead"}},
		{label: "cuda-hopper[producer=tma,kernel=wgmma]", want: map[string]string{"kernel": "wgmma", "producer": "tma"}},
		{label: "cuda-hopper[producer=tma]", want: map[string]string{"kernel": "wgmma", "producer": "tma"}},
		// kv_stages is not swept: it is at its default, 3.
		{label: "cuda-hopper[kv_stages=3,producer=ahead]", want: map[string]string{"kernel": "wgmma", "producer": "ahead"}},
		{label: "cuda-hopper[kernel=wgmma]", ambiguous: true, rows: rows},
		{label: "cuda-hopper[kernel=wgmma,producer=wait]", rows: rows}, // not a row of this suite
		{label: "cuda-hopper[kv_stages=2]", rows: rows},
		{label: "cuda-hopper[nothing=1]", rows: rows},
		{label: "other[producer=tma]"},
		{label: "cuda-hopper"}, // a variant, found by name before
		{label: "cuda-hopper[producer]"},
		{label: "cuda-hopper[producer=tma,producer=ahead]"},
	}
	for _, tc := range tests {
		got := rowByLabel(variants, sel, tc.label)
		switch {
		case tc.want == nil && got.found:
			t.Errorf("%s: found %+v", tc.label, got.sel)
		case tc.want != nil && (!got.found || len(got.sel.Configs) != 1 || !maps.Equal(got.sel.Configs[0], tc.want) ||
			len(got.sel.Variants) != 1 || got.sel.Variants[0] != "cuda-hopper" || got.sel.Tunables != nil):
			t.Errorf("%s: %+v; want the row %v alone", tc.label, got, tc.want)
		case tc.want == nil && (got.ambiguous != tc.ambiguous || !slices.Equal(got.rows, tc.rows)):
			t.Errorf("%s: ambiguous %v, rows %q; want %v, %q", tc.label, got.ambiguous, got.rows, tc.ambiguous, tc.rows)
		}
	}
}

// An error names at most maxListedRows rows, then how many more.
func TestListRows(t *testing.T) {
	many := make([]string, maxListedRows+3)
	for i := range many {
		many[i] = fmt.Sprintf("r%d", i)
	}
	tests := []struct {
		rows []string
		want string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a, b"},
		{many[:maxListedRows], strings.Join(many[:maxListedRows], ", ")},
		{many, strings.Join(many[:maxListedRows], ", ") + " and 3 more"},
	}
	for _, tc := range tests {
		if got := listRows(tc.rows); got != tc.want {
			t.Errorf("listRows(%d rows) = %q, want %q", len(tc.rows), got, tc.want)
		}
	}
}
