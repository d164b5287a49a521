// Package attention declares dense attention forward, the first op of
// FlashCore bench, as data: its axes, its tensors, and the mapping between
// a case's Params and the SDK's attention Shape that kernels are written
// against. Its behaviour (inputs, reference, check, work) lives in the
// core packages that predate the op interface, bound to it in package ops.
package attention

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// Name is the op's name in suites, results and the wire. It is the op of
// a suite entry that names none.
const Name = "attention"

// Spec is attention forward as data. Tensors are [batch, heads, seq,
// head_dim]; the meaning of each axis is sdk.Shape's.
var Spec = op.Spec{
	Name: Name,
	Summary: "dense attention, softmax(Q·Kᵀ/sqrt(D))·V, forward and backward, with grouped-query heads and causal masking (top-left by default); " +
		"in the forward, bottom-right alignment, sliding windows and logit soft-capping",
	Axes: append([]op.Axis{
		{Name: "batch", Kind: op.Int, Doc: "batch size B"},
		{Name: "heads", Kind: op.Int, Doc: "query heads H"},
		{Name: "kv_heads", Kind: op.Int, SameAs: "heads", Doc: "key/value heads; must divide heads (grouped-query attention when fewer)"},
		{Name: "seq_q", Kind: op.Int, Doc: "query rows Sq"},
		{Name: "seq_k", Kind: op.Int, SameAs: "seq_q", Doc: "key/value rows Sk"},
		{Name: "head_dim", Kind: op.Int, Doc: "head dimension D"},
		{Name: "dtype", Kind: op.Elem, Default: string(sdk.FP16), Doc: "element type of every tensor"},
		{Name: "causal", Kind: op.Bool, Default: "false", Doc: "causal mask: query row i sees key rows j <= i (top-left; causal_align moves it)"},
		{Name: "mode", Kind: op.Choice, Default: string(sdk.Forward), Values: modeNames(),
			Doc: "fwd: o from q, k, v; bwd: dq, dk, dv from q, k, v, o, do and lse (o and lse from the fp64 reference forward); fwd+bwd: both passes in one call, from q, k, v and do"},
	}, mask.DenseAxes()...),
	Inputs: []op.Tensor{
		{Name: "q", DType: "dtype", Dims: []string{"batch", "heads", "seq_q", "head_dim"}},
		{Name: "k", DType: "dtype", Dims: []string{"batch", "kv_heads", "seq_k", "head_dim"}},
		{Name: "v", DType: "dtype", Dims: []string{"batch", "kv_heads", "seq_k", "head_dim"}},
		{Name: "o", DType: "dtype", Dims: []string{"batch", "heads", "seq_q", "head_dim"}, When: backwardOnly},
		{Name: "do", DType: "dtype", Dims: []string{"batch", "heads", "seq_q", "head_dim"}, When: withBackward},
		// lse[b, h, i] = log Σ_j exp(scale·q_i·k_j) over the keys row i
		// sees: the natural log, fp32, as FlashAttention's softmax_lse.
		{Name: "lse", DType: "fp32", Dims: []string{"batch", "heads", "seq_q"}, When: backwardOnly},
	},
	Outputs: []op.Tensor{
		{Name: "o", DType: "dtype", Dims: []string{"batch", "heads", "seq_q", "head_dim"}, When: withForward},
		{Name: "dq", DType: "dtype", Dims: []string{"batch", "heads", "seq_q", "head_dim"}, When: withBackward,
			ToleranceFactor: GradientToleranceFactor["dq"], MayDiffer: true},
		{Name: "dk", DType: "dtype", Dims: []string{"batch", "kv_heads", "seq_k", "head_dim"}, When: withBackward,
			ToleranceFactor: GradientToleranceFactor["dk"], MayDiffer: true},
		{Name: "dv", DType: "dtype", Dims: []string{"batch", "kv_heads", "seq_k", "head_dim"}, When: withBackward,
			ToleranceFactor: GradientToleranceFactor["dv"], MayDiffer: true},
	},
	Roof: op.ComputeRoof,
	Contract: "attention(q, k, v, *, causal, scale) -> o (and causal_align=, window_left=, window_right=, softcap= where a case sets them); " +
		"attention_backward(q, k, v, o, do, lse, *, causal, scale) -> (dq, dk, dv)",
	Chart: &op.Chart{X: "seq_k", XLabel: "Sequence length (tokens)"},
}

// The modes each tensor belongs to (op.Tensor.When).
var (
	withForward  = map[string][]string{"mode": {string(sdk.Forward), string(sdk.ForwardBackward)}}
	withBackward = map[string][]string{"mode": {string(sdk.Backward), string(sdk.ForwardBackward)}}
	backwardOnly = map[string][]string{"mode": {string(sdk.Backward)}}
)

func modeNames() []string {
	out := make([]string, len(sdk.Modes))
	for i, m := range sdk.Modes {
		out[i] = string(m)
	}
	return out
}

// ParamsOf is the Params of a shape.
func ParamsOf(s sdk.Shape) op.Params {
	return op.Params{
		"batch":    strconv.Itoa(s.Batch),
		"heads":    strconv.Itoa(s.Heads),
		"kv_heads": strconv.Itoa(s.KVHeads),
		"seq_q":    strconv.Itoa(s.SeqQ),
		"seq_k":    strconv.Itoa(s.SeqK),
		"head_dim": strconv.Itoa(s.HeadDim),
		"dtype":    string(s.DType),
		"causal":   strconv.FormatBool(s.Causal),
		"mode":     string(s.Mode.Or()),
	}
}

// ShapeFrom is the shape Params describe.
func ShapeFrom(p op.Params) sdk.Shape {
	return sdk.Shape{
		Batch:   p.Int("batch"),
		Heads:   p.Int("heads"),
		KVHeads: p.Int("kv_heads"),
		SeqQ:    p.Int("seq_q"),
		SeqK:    p.Int("seq_k"),
		HeadDim: p.Int("head_dim"),
		Causal:  p.Bool("causal"),
		DType:   p.DType("dtype"),
		Mode:    shapeMode(p),
	}
}

// shapeMode is the Shape.Mode of params: empty for forward, so that a
// forward shape is what it was before modes existed, on the wire and in
// results files.
func shapeMode(p op.Params) sdk.Mode {
	if m := sdk.Mode(p["mode"]); m != sdk.Forward {
		return m
	}
	return ""
}

// ShapeOf is the shape of an attention case.
func ShapeOf(c op.Case) sdk.Shape { return ShapeFrom(c.Params) }

// MaskOf is the mask of a case's params (mask.Dense): its causal flag,
// alignment, window and soft-capping.
func MaskOf(p op.Params) mask.Mask { return mask.Dense(p) }

// Masked reports whether params set a mask axis away from its default
// (mask.DenseAxes): a case dense attention had no words for before.
func Masked(p op.Params) bool { return MaskedAxis(p) != "" }

// MaskedAxis is the first mask axis params set away from its default, or
// "".
func MaskedAxis(p op.Params) string {
	for _, a := range mask.DenseAxes() {
		if v, set := p[a.Name]; set && v != a.Default {
			return a.Name
		}
	}
	return ""
}

// NewCase returns the attention case of a shape and distribution, with
// its ID.
func NewCase(s sdk.Shape, dist op.Distribution) op.Case {
	return op.Case{ID: CaseID(s, dist), Op: Name, Params: ParamsOf(s), Distribution: dist}
}

// CaseID is the stable name of a case: lower-case and dash-separated,
// b{B}-h{H}[-kv{Hkv}]-s{Sq}[-sk{Sk}]-d{D}-{dtype}[-causal][-{mode}][-{distribution}],
// where the bracketed parts appear only when they differ from the common
// case (Hkv = H, Sk = Sq, non-causal, forward, normal); mode is bwd or
// fwdbwd. It keys the input generator,
// so a case's inputs do not change when the suite around it does.
func CaseID(s sdk.Shape, dist op.Distribution) string { return caseID(s, "", dist) }

// CaseIDOf is the ID of the case of params: CaseID with the masks set
// away from their defaults after -causal (mask.IDSuffix: -br, -w{left}[_{right}],
// -cap{c}), so that a case without them keeps the ID it always had.
func CaseIDOf(p op.Params, dist op.Distribution) string {
	return caseID(ShapeFrom(p), mask.IDSuffix(p), dist)
}

// LabelOf is the table label of the case of params: the shape's
// (sdk.Shape.String) and its masks (mask.LabelSuffix).
func LabelOf(p op.Params) string { return ShapeFrom(p).String() + mask.LabelSuffix(p) }

func caseID(s sdk.Shape, masks string, dist op.Distribution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "b%d-h%d", s.Batch, s.Heads)
	if s.KVHeads != s.Heads {
		fmt.Fprintf(&b, "-kv%d", s.KVHeads)
	}
	fmt.Fprintf(&b, "-s%d", s.SeqQ)
	if s.SeqK != s.SeqQ {
		fmt.Fprintf(&b, "-sk%d", s.SeqK)
	}
	fmt.Fprintf(&b, "-d%d-%s", s.HeadDim, s.DType)
	if s.Causal {
		b.WriteString("-causal")
	}
	b.WriteString(masks)
	switch s.Mode.Or() {
	case sdk.Backward:
		b.WriteString("-bwd")
	case sdk.ForwardBackward:
		b.WriteString("-fwdbwd")
	}
	if dist != op.Normal && dist != "" {
		fmt.Fprintf(&b, "-%s", dist)
	}
	return strings.ToLower(b.String())
}

// GradientToleranceFactor is how many times the dtype's tolerance
// (op.DefaultTolerances) each gradient is held to. A straightforward
// backward in the dtype (P and dS rounded to it, products accumulated in
// fp32) needs at most 0.41× the forward's tolerance against fp64 at the
// backward suite's shapes (scripts/tolerance_probe_backward.py,
// docs/correctness.md), so the forward's tolerance leaves more than
// FlashAttention's 2× over that error: each factor is 1.
var GradientToleranceFactor = map[string]float64{"dq": 1, "dk": 1, "dv": 1}
