package mask

import (
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		name           string
		m              Mask
		i, qLen, kLen  int
		wantLo, wantHi int
	}{
		{"plain", Mask{Left: -1, Right: -1}, 0, 4, 10, 0, 9},
		{"causal bottom-right", Mask{Causal: true, Left: -1, Right: -1}, 0, 4, 10, 0, 6},
		{"causal square", Mask{Causal: true, Left: -1, Right: -1}, 2, 5, 5, 0, 2},
		{"decode token", Mask{Causal: true, Left: -1, Right: -1}, 0, 1, 8191, 0, 8190},
		{"window left", Mask{Causal: true, Left: 3, Right: -1}, 3, 4, 10, 6, 9},
		{"window both", Mask{Left: 2, Right: 1}, 1, 5, 5, 0, 2},
		{"window zero", Mask{Left: 0, Right: 0}, 4, 5, 5, 4, 4},
	} {
		lo, hi := tc.m.Keys(tc.i, tc.qLen, tc.kLen)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("%s: keys [%d, %d], want [%d, %d]", tc.name, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

func TestOfAndSuffixes(t *testing.T) {
	p := op.Params{"causal": "true", "window_left": "128", "window_right": "0", "softcap": "30"}
	m := Of(p)
	if !m.Causal || m.Left != 128 || m.Right != 0 || m.Softcap != 30 {
		t.Errorf("Of: %+v", m)
	}
	if got := IDSuffix(p) + "|" + LabelSuffix(p); got != "-w128_0-cap30| window128,0 softcap30" {
		t.Errorf("suffixes %q", got)
	}
	if m := Of(op.Params{}); m.Windowed() || m.Softcap != 0 || IDSuffix(op.Params{}) != "" {
		t.Errorf("absent axes: %+v, want no window and no softcap", m)
	}
	if s := m.Score(1e6); s > 30 {
		t.Errorf("a capped score of 1e6 is %v, want at most 30", s)
	}
}

func TestUnsupported(t *testing.T) {
	all := sdk.Capabilities{Causal: true, NonCausal: true, Masks: []string{sdk.MaskWindow, sdk.MaskSoftcap}}
	for _, tc := range []struct {
		m    Mask
		caps sdk.Capabilities
		want string
	}{
		{Mask{Causal: true, Left: 5, Right: -1, Softcap: 1}, all, ""},
		{Mask{Left: 5, Right: -1}, sdk.Capabilities{NonCausal: true}, "sliding window not supported"},
		{Mask{Left: -1, Right: -1, Softcap: 2}, sdk.Capabilities{NonCausal: true, Masks: []string{sdk.MaskWindow}}, "soft-capping not supported"},
		{Mask{Causal: true, Left: -1, Right: -1}, sdk.Capabilities{NonCausal: true}, "causal masking not supported"},
	} {
		if got := tc.m.Unsupported(tc.caps, true); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}
