package sdk

import (
	"maps"
	"testing"
)

func TestResolveTunables(t *testing.T) {
	declared := []Tunable{
		{Name: "tile_n", Values: []string{"32", "64"}, Default: "32"},
		{Name: "kv_stages", Values: []string{"1", "2"}, Default: "2"},
	}
	perOp := []Tunable{
		{Name: "rows", Values: []string{"4", "8"}, Default: "8", Ops: []string{"attention"}},
		{Name: "vec", Values: []string{"1", "4"}, Default: "4", Ops: []string{"rmsnorm"}},
		{Name: "both", Values: []string{"a", "b"}, Default: "a", Ops: []string{"attention", "rmsnorm"}},
		{Name: "any", Values: []string{"x", "y"}, Default: "x"},
	}
	tests := []struct {
		name      string
		declared  []Tunable
		op        string
		requested map[string]string
		want      map[string]string
		err       string
	}{
		{"defaults", declared, "attention", nil, map[string]string{"tile_n": "32", "kv_stages": "2"}, ""},
		{"one set", declared, "attention", map[string]string{"kv_stages": "1"}, map[string]string{"tile_n": "32", "kv_stages": "1"}, ""},
		{"no ops: every op", declared, "rmsnorm", map[string]string{"kv_stages": "1"}, map[string]string{"tile_n": "32", "kv_stages": "1"}, ""},
		{"unknown name", declared, "attention", map[string]string{"tile_m": "48"}, nil, `unknown tunable "tile_m" (this variant has: kv_stages, tile_n)`},
		{"undeclared value", declared, "attention", map[string]string{"tile_n": "128"}, nil, `tunable tile_n: "128" is not one of 32, 64`},
		{"none declared", nil, "attention", map[string]string{"x": "1"}, nil, `unknown tunable "x" (this variant has: none)`},
		{"per op: attention defaults", perOp, "attention", nil, map[string]string{"rows": "8", "both": "a", "any": "x"}, ""},
		{"per op: rmsnorm defaults", perOp, "rmsnorm", nil, map[string]string{"vec": "4", "both": "a", "any": "x"}, ""},
		{"per op: other op defaults", perOp, "softmax", nil, map[string]string{"any": "x"}, ""},
		{"per op: set", perOp, "attention", map[string]string{"rows": "4", "both": "b"}, map[string]string{"rows": "4", "both": "b", "any": "x"}, ""},
		{"per op: another op's tunable", perOp, "rmsnorm", map[string]string{"rows": "4"}, nil, `tunable rows does not apply to op rmsnorm (it applies to attention)`},
		{"per op: another op's tunable, checked before its value", perOp, "attention", map[string]string{"vec": "7"}, nil, `tunable vec does not apply to op attention (it applies to rmsnorm)`},
		{"per op: unknown name lists every tunable", perOp, "rmsnorm", map[string]string{"cols": "1"}, nil, `unknown tunable "cols" (this variant has: any, both, rows, vec)`},
		{"per op: undeclared value", perOp, "rmsnorm", map[string]string{"vec": "8"}, nil, `tunable vec: "8" is not one of 1, 4`},
	}
	for _, tc := range tests {
		got, err := ResolveTunables(tc.declared, tc.op, tc.requested)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestApplicableTunables(t *testing.T) {
	declared := []Tunable{
		{Name: "rows", Ops: []string{"attention"}},
		{Name: "any"},
		{Name: "vec", Ops: []string{"rmsnorm"}},
	}
	requested := map[string]string{"rows": "4", "any": "x", "vec": "1", "unknown": "7"}
	tests := []struct {
		op        string
		requested map[string]string
		want      map[string]string
	}{
		{"attention", requested, map[string]string{"rows": "4", "any": "x", "unknown": "7"}},
		{"rmsnorm", requested, map[string]string{"any": "x", "vec": "1", "unknown": "7"}},
		{"rmsnorm", map[string]string{"rows": "4"}, nil},
		{"attention", nil, nil},
	}
	for _, tc := range tests {
		got := ApplicableTunables(declared, tc.op, tc.requested)
		if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("ApplicableTunables(%s, %v) = %#v, want %#v", tc.op, tc.requested, got, tc.want)
		}
	}
}
