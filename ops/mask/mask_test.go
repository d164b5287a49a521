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

func TestKeysAligned(t *testing.T) {
	topLeft, bottomRight := Plain(true), Plain(true)
	bottomRight.TopLeft = false
	for _, tc := range []struct {
		name           string
		m              Mask
		i, qLen, kLen  int
		wantLo, wantHi int
	}{
		{"top-left sq < sk", topLeft, 0, 4, 10, 0, 0},
		{"bottom-right sq < sk", bottomRight, 0, 4, 10, 0, 6},
		{"top-left sq > sk sees every key", topLeft, 9, 10, 4, 0, 3},
		{"bottom-right sq > sk: row 0 sees none", bottomRight, 0, 10, 4, 0, -6},
		{"bottom-right sq > sk: last row sees all", bottomRight, 9, 10, 4, 0, 3},
		{"top-left window", Mask{Causal: true, TopLeft: true, Left: 1, Right: -1}, 3, 4, 10, 2, 3},
		{"bottom-right window", Mask{Causal: true, Left: 1, Right: -1}, 3, 4, 10, 8, 9},
		{"top-left non-causal two-sided window", Mask{TopLeft: true, Left: 1, Right: 2}, 0, 4, 10, 0, 2},
	} {
		lo, hi := tc.m.Keys(tc.i, tc.qLen, tc.kLen)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("%s: keys [%d, %d], want [%d, %d]", tc.name, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

func TestDense(t *testing.T) {
	for _, tc := range []struct {
		p      op.Params
		want   Mask
		id     string
		label  string
		prefix bool // over 4 queries and 10 keys
	}{
		{op.Params{"causal": "true"}, Mask{Causal: true, TopLeft: true, Left: -1, Right: -1}, "", "", true},
		{op.Params{"causal": "true", "causal_align": "bottom-right"}, Mask{Causal: true, Left: -1, Right: -1}, "-br", " bottom-right", false},
		{op.Params{"causal": "false", "causal_align": "bottom-right"}, Mask{Left: -1, Right: -1}, "-br", " bottom-right", true},
		{op.Params{"causal": "true", "causal_align": "top-left", "window_left": "64"}, Mask{Causal: true, TopLeft: true, Left: 64, Right: -1}, "-w64", " window64", false},
		{op.Params{"softcap": "50"}, Mask{TopLeft: true, Left: -1, Right: -1, Softcap: 50}, "-cap50", " softcap50", false},
	} {
		m := Dense(tc.p)
		if m != tc.want {
			t.Errorf("Dense(%v) = %+v, want %+v", tc.p, m, tc.want)
		}
		if id, label := IDSuffix(tc.p), LabelSuffix(tc.p); id != tc.id || label != tc.label {
			t.Errorf("%v: suffixes %q %q, want %q %q", tc.p, id, label, tc.id, tc.label)
		}
		if got := m.Prefix(4, 10); got != tc.prefix {
			t.Errorf("%v: Prefix %v, want %v", tc.p, got, tc.prefix)
		}
	}
	for _, a := range DenseAxes() {
		if !a.OmitDefault || a.Default == "" {
			t.Errorf("dense axis %s: OmitDefault %v, default %q; want left out at a default", a.Name, a.OmitDefault, a.Default)
		}
	}
}

func TestUnsupportedDense(t *testing.T) {
	causal := sdk.Capabilities{Causal: true, NonCausal: true}
	aligned := sdk.Capabilities{Causal: true, NonCausal: true, Masks: []string{sdk.MaskBottomRight}}
	bottomRight := Plain(true)
	bottomRight.TopLeft = false
	window := Mask{TopLeft: true, Left: 8, Right: -1}
	for _, tc := range []struct {
		name       string
		m          Mask
		caps       sdk.Capabilities
		qLen, kLen int
		want       string
	}{
		{"top-left needs nothing", Plain(true), causal, 4, 10, ""},
		{"bottom-right sq = sk is top-left", bottomRight, causal, 10, 10, ""},
		{"bottom-right sq != sk", bottomRight, causal, 4, 10, "bottom-right mask alignment (seq_q != seq_k) not supported"},
		{"bottom-right declared", bottomRight, aligned, 4, 10, ""},
		{"bottom-right without causal moves nothing", Mask{Left: -1, Right: -1}, causal, 4, 10, ""},
		{"window", window, aligned, 4, 10, "sliding window not supported"},
	} {
		if got := tc.m.UnsupportedDense(tc.caps, tc.qLen, tc.kLen); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
