package runner

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func TestDriverVersionsComeFromEitherKindOfBackend(t *testing.T) {
	gpus := []sdk.Device{
		{Kind: "gpu", Name: "H100", Driver: "CUDA 13.0"},
		{Kind: "gpu", Name: "H100", Driver: "580.159.04"},
	}
	driver, cuda := driverVersions(gpus)
	if driver != "580.159.04" || cuda != "13.0" {
		t.Errorf("driverVersions = %q, %q", driver, cuda)
	}
	if d, c := driverVersions(nil); d != "" || c != "" {
		t.Errorf("no GPUs: %q, %q", d, c)
	}
}

func TestLabelNamesTunablesInOrder(t *testing.T) {
	got := label("cuda-v8", map[string]string{"tile_n": "64", "kv_stages": "1"})
	if got != "cuda-v8[kv_stages=1,tile_n=64]" {
		t.Errorf("label = %q", got)
	}
}

// A tunable of attention alone, swept over a variant that runs rmsnorm
// too: each attention case gets a row per value, each rmsnorm case one
// row, the first in plan order, without the tunable in its request or
// label. A tunable of every op still makes rows of both.
func TestCaseRowsDropTunablesOfOtherOps(t *testing.T) {
	v := sdk.Variant{Name: "two", Ops: []string{"attention", "rmsnorm"}, Tunables: []sdk.Tunable{
		{Name: "rows", Values: []string{"4", "8", "16"}, Default: "8", Ops: []string{"attention"}},
		{Name: "any", Values: []string{"a", "b"}, Default: "a"},
	}}
	b := &backend{plugin: host.Plugin{Name: "two"}, description: sdk.Description{Available: true, Variants: []sdk.Variant{v}}}
	tests := []struct {
		name       string
		sel        suite.BackendSelection
		attention  []string
		rmsnorm    []string
		rmsnormReq []map[string]string
	}{
		{"attention's tunable", suite.BackendSelection{Name: "two", Tunables: map[string][]string{"rows": {"4", "16"}}},
			[]string{"two[rows=4]", "two[rows=16]"}, []string{"two"}, []map[string]string{nil}},
		{"with a tunable of every op", suite.BackendSelection{Name: "two", Tunables: map[string][]string{"rows": {"4", "16"}, "any": {"a", "b"}}},
			[]string{"two[any=a,rows=4]", "two[any=b,rows=4]", "two[any=a,rows=16]", "two[any=b,rows=16]"},
			[]string{"two[any=a]", "two[any=b]"}, []map[string]string{{"any": "a"}, {"any": "b"}}},
		{"configs", suite.BackendSelection{Name: "two", Configs: []map[string]string{{"rows": "4"}, {}, {"rows": "16", "any": "b"}}},
			[]string{"two[rows=4]", "two", "two[any=b,rows=16]"}, []string{"two", "two[any=b]"}, []map[string]string{nil, {"any": "b"}}},
		{"no selection", suite.BackendSelection{Name: "two"}, []string{"two"}, []string{"two"}, []map[string]string{nil}},
	}
	attention := op.Case{ID: "a", Op: "attention"}
	rmsnorm := op.Case{ID: "r", Op: "rmsnorm"}
	for _, tc := range tests {
		rows, err := plan([]*backend{b}, []suite.BackendSelection{tc.sel})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		labels := func(rows []row) []string {
			var out []string
			for _, rw := range rows {
				out = append(out, rw.label)
			}
			return out
		}
		if got := labels(caseRows(attention, rows)); !slices.Equal(got, tc.attention) {
			t.Errorf("%s: attention rows %q, want %q", tc.name, got, tc.attention)
		}
		onRMSNorm := caseRows(rmsnorm, rows)
		if got := labels(onRMSNorm); !slices.Equal(got, tc.rmsnorm) {
			t.Errorf("%s: rmsnorm rows %q, want %q", tc.name, got, tc.rmsnorm)
			continue
		}
		for i, rw := range onRMSNorm {
			if !maps.Equal(rw.tunables, tc.rmsnormReq[i]) {
				t.Errorf("%s: rmsnorm row %s requests %v, want %v", tc.name, rw.label, rw.tunables, tc.rmsnormReq[i])
			}
		}
	}
}

// The host's check of a suite's tunables still refuses an unknown name or
// an undeclared value of a tunable of one op.
func TestPlanChecksTunablesOfOneOp(t *testing.T) {
	v := sdk.Variant{Name: "two", Ops: []string{"attention", "rmsnorm"}, Tunables: []sdk.Tunable{
		{Name: "rows", Values: []string{"4", "8"}, Default: "8", Ops: []string{"attention"}},
	}}
	b := &backend{plugin: host.Plugin{Name: "two"}, description: sdk.Description{Available: true, Variants: []sdk.Variant{v}}}
	for tunables, want := range map[string]string{
		"rows=5": `backend two variant two: tunable rows: "5" is not one of 4, 8`,
		"cols=1": `backend two variant two: unknown tunable "cols" (this variant has: rows)`,
	} {
		name, value, _ := strings.Cut(tunables, "=")
		_, err := plan([]*backend{b}, []suite.BackendSelection{{Name: "two", Tunables: map[string][]string{name: {value}}}})
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", tunables, err, want)
		}
	}
}
