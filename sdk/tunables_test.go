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
	tests := []struct {
		name      string
		declared  []Tunable
		requested map[string]string
		want      map[string]string
		err       string
	}{
		{"defaults", declared, nil, map[string]string{"tile_n": "32", "kv_stages": "2"}, ""},
		{"one set", declared, map[string]string{"kv_stages": "1"}, map[string]string{"tile_n": "32", "kv_stages": "1"}, ""},
		{"unknown name", declared, map[string]string{"tile_m": "48"}, nil, `unknown tunable "tile_m" (this variant has: kv_stages, tile_n)`},
		{"undeclared value", declared, map[string]string{"tile_n": "128"}, nil, `tunable tile_n: "128" is not one of 32, 64`},
		{"none declared", nil, map[string]string{"x": "1"}, nil, `unknown tunable "x" (this variant has: none)`},
	}
	for _, tc := range tests {
		got, err := ResolveTunables(tc.declared, tc.requested)
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
