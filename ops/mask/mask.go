// Package mask is the one definition of the masks of the attention ops
// beyond plain attention: which keys a query row sees (causal, aligned to
// the top-left or the bottom-right corner, and a sliding window) and
// logit soft-capping. decode, varlen and dense attention read their axes
// through it, their references, checks and work models ask it which keys
// a row sees, and their capability checks ask it which masks a case
// needs.
//
// decode and varlen are bottom-right aligned by nature (new tokens at the
// end of their sequence); dense attention takes the alignment as an axis,
// causal_align, top-left by default as PyTorch's is_causal.
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
	// TopLeft puts query row i at key position i, as PyTorch's
	// is_causal does; otherwise query i of qLen over kLen keys sits at
	// kLen-qLen+i, the bottom-right corner, as FlashAttention (2.1 and
	// later) and serving stacks put it. Causal and the window are
	// measured from that position. The two are the same when qLen = kLen.
	TopLeft bool
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

// The alignments of dense attention's axis causal_align.
const (
	// AlignTopLeft: query row i sits at key position i (PyTorch's
	// is_causal); the default.
	AlignTopLeft = "top-left"
	// AlignBottomRight: query row i sits at key position seq_k-seq_q+i
	// (FlashAttention 2.1 and later), as decode's and varlen's do.
	AlignBottomRight = "bottom-right"
)

// DenseAxes are the mask axes of dense attention, with their docs:
// causal_align, window_left, window_right and softcap, each left out of
// a case's params at its default (op.Axis.OmitDefault), since dense
// attention's cases were recorded before it had them.
func DenseAxes() []op.Axis {
	axes := append([]op.Axis{{Name: "causal_align", Kind: op.Choice, Default: AlignTopLeft,
		Values: []string{AlignTopLeft, AlignBottomRight},
		Doc: "where causal and window masks sit when seq_q != seq_k: top-left, query row i at key position i " +
			"(PyTorch's is_causal), or bottom-right, at seq_k-seq_q+i (FlashAttention >= 2.1)"}}, Axes(true)...)
	for i := range axes {
		axes[i].OmitDefault = true
	}
	return axes
}

// Of reads the mask axes of a case of decode or varlen, bottom-right
// aligned; an absent axis is its default.
func Of(p op.Params) Mask {
	return Mask{Causal: p.Bool("causal"), Left: bound(p, "window_left"), Right: bound(p, "window_right"), Softcap: p.Float("softcap")}
}

// Dense reads the mask axes of a dense attention case (DenseAxes): Of,
// aligned as causal_align says, top-left when it is absent.
func Dense(p op.Params) Mask {
	m := Of(p)
	m.TopLeft = p["causal_align"] != AlignBottomRight
	return m
}

// Plain is dense attention's mask before it had mask axes: causal or
// not, top-left, no window, no soft-capping.
func Plain(causal bool) Mask { return Mask{Causal: causal, TopLeft: true, Left: -1, Right: -1} }

func bound(p op.Params, name string) int {
	if n, err := strconv.Atoi(p[name]); err == nil {
		return n
	}
	return -1
}

// Keys is the range [lo, hi] of the keys that query row i of a sequence
// of qLen queries over kLen keys sees. Query i sits at key position
// kLen-qLen+i (bottom-right, as in FlashAttention and serving stacks), or
// i when TopLeft. The range is empty (hi < lo) when the mask excludes
// every key: a window's, or a bottom-right causal row above the first key
// (qLen > kLen). Both ends never decrease as i grows.
func (m Mask) Keys(i, qLen, kLen int) (lo, hi int) {
	p := kLen - qLen + i
	if m.TopLeft {
		p = i
	}
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

// Moved reports whether the alignment changes which keys a row of qLen
// queries over kLen keys sees: the lengths differ, and a causal mask or
// a window places keys relative to the query's position.
func (m Mask) Moved(qLen, kLen int) bool { return qLen != kLen && (m.Causal || m.Windowed()) }

// Prefix reports whether every row of qLen queries over kLen keys sees a
// prefix of the keys that grows as causal top-left does: no window, no
// soft-capping, and causal (if at all) at the top-left corner or where
// the alignment does not move it. Dense attention's blocked reference
// computes these cases; every other goes key range by key range.
func (m Mask) Prefix(qLen, kLen int) bool {
	return !m.Windowed() && m.Softcap == 0 && (m.TopLeft || !m.Moved(qLen, kLen))
}

// UnsupportedDense is Unsupported for dense attention of qLen queries
// over kLen keys, whose causal flag the shape's own check holds to caps:
// the window, soft-capping, and sdk.MaskBottomRight where the alignment
// moves the mask.
func (m Mask) UnsupportedDense(caps sdk.Capabilities, qLen, kLen int) string {
	if !m.TopLeft && m.Moved(qLen, kLen) && !caps.Applies(sdk.MaskBottomRight) {
		return "bottom-right mask alignment (seq_q != seq_k) not supported"
	}
	return m.Unsupported(caps, false)
}

// IDSuffix is the part of a case ID the mask adds away from its defaults:
// -br for the bottom-right alignment of an op that has the axis
// causal_align, -w{left}_{right} (or -w{left} where the right bound is
// absent) and -cap{c}.
func IDSuffix(p op.Params) string {
	m := Of(p)
	out := ""
	if p["causal_align"] == AlignBottomRight {
		out += "-br"
	}
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

// LabelSuffix is what a label adds for the mask: " bottom-right",
// " window{left}" (or " window{left},{right}") and " softcap{c}".
func LabelSuffix(p op.Params) string {
	m := Of(p)
	out := ""
	if p["causal_align"] == AlignBottomRight {
		out += " bottom-right"
	}
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
