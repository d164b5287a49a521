// Package mask is the one definition of the masks of the attention ops
// beyond plain attention: which keys a query row sees (causal, aligned to
// the bottom-right corner, and a sliding window) and logit soft-capping.
// decode and varlen read their axes through it, their references and work
// models ask it which keys a row sees, and their capability checks ask it
// which masks a case needs.
package mask

import (
	"math"
	"strconv"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Mask is the masking of one case.
type Mask struct {
	// Causal: a query row sees no key after its own position.
	Causal bool
	// Left and Right bound a sliding window: a query at position p sees
	// keys p-Left ... p+Right. -1 is no bound.
	Left, Right int
	// Softcap, above 0, caps every score s (scale included) to
	// Softcap·tanh(s/Softcap) before the softmax.
	Softcap float64
}

// Axes are the mask axes an op declares, with their docs: window_left,
// window_right when right is true (decode has none: nothing lies to the
// right of its last token), and softcap.
func Axes(right bool) []op.Axis {
	out := []op.Axis{{Name: "window_left", Kind: op.Window, Default: "-1",
		Doc: "sliding window: a query at position p sees keys j >= p-window_left; -1 for no bound"}}
	if right {
		out = append(out, op.Axis{Name: "window_right", Kind: op.Window, Default: "-1",
			Doc: "sliding window: a query at position p sees keys j <= p+window_right; -1 for no bound"})
	}
	return append(out, op.Axis{Name: "softcap", Kind: op.Float, Default: "0",
		Doc: "logit soft-capping: a score s (scale included) becomes softcap·tanh(s/softcap) before the softmax; 0 for none"})
}

// Of reads a case's mask axes; an absent axis is its default.
func Of(p op.Params) Mask {
	return Mask{Causal: p.Bool("causal"), Left: bound(p, "window_left"), Right: bound(p, "window_right"), Softcap: p.Float("softcap")}
}

func bound(p op.Params, name string) int {
	if n, err := strconv.Atoi(p[name]); err == nil {
		return n
	}
	return -1
}

// Keys is the range [lo, hi] of the keys that query row i of a sequence
// of qLen queries over kLen keys sees, its queries aligned to the
// bottom-right corner: query i sits at key position kLen-qLen+i, as in
// FlashAttention and serving stacks. The range is empty (hi < lo) only
// when a window excludes every key.
func (m Mask) Keys(i, qLen, kLen int) (lo, hi int) {
	p := kLen - qLen + i
	lo, hi = 0, kLen-1
	if m.Causal {
		hi = min(hi, p)
	}
	if m.Right >= 0 {
		hi = min(hi, p+m.Right)
	}
	if m.Left >= 0 {
		lo = max(lo, p-m.Left)
	}
	return lo, hi
}

// Score is a scaled score after soft-capping.
func (m Mask) Score(s float64) float64 {
	if m.Softcap > 0 {
		return m.Softcap * math.Tanh(s/m.Softcap)
	}
	return s
}

// Windowed reports whether the mask has a sliding window.
func (m Mask) Windowed() bool { return m.Left >= 0 || m.Right >= 0 }

// Unsupported says why a variant with capabilities caps cannot apply the
// mask, or "": causal or not (when causal matters to the case), the
// window and soft-capping.
func (m Mask) Unsupported(caps sdk.Capabilities, causalMatters bool) string {
	switch {
	case causalMatters && m.Causal && !caps.Causal:
		return "causal masking not supported"
	case causalMatters && !m.Causal && !caps.NonCausal:
		return "non-causal attention not supported"
	case m.Windowed() && !caps.Applies(sdk.MaskWindow):
		return "sliding window not supported"
	case m.Softcap > 0 && !caps.Applies(sdk.MaskSoftcap):
		return "soft-capping not supported"
	}
	return ""
}

// IDSuffix is the part of a case ID the mask adds away from its defaults:
// -w{left}_{right} (or -w{left} without a right bound axis) and -cap{c}.
func IDSuffix(p op.Params) string {
	m := Of(p)
	out := ""
	if m.Windowed() {
		out += "-w" + strconv.Itoa(m.Left)
		if _, ok := p["window_right"]; ok {
			out += "_" + strconv.Itoa(m.Right)
		}
	}
	if m.Softcap > 0 {
		out += "-cap" + p["softcap"]
	}
	return out
}

// LabelSuffix is what a label adds for the mask: " window{left}" (or
// " window{left},{right}") and " softcap{c}".
func LabelSuffix(p op.Params) string {
	m := Of(p)
	out := ""
	if m.Windowed() {
		out += " window" + strconv.Itoa(m.Left)
		if _, ok := p["window_right"]; ok {
			out += "," + strconv.Itoa(m.Right)
		}
	}
	if m.Softcap > 0 {
		out += " softcap" + p["softcap"]
	}
	return out
}
