// Package varlen is attention over a batch of sequences of different
// lengths packed end to end, as a serving stack's prefill runs it:
// FlashAttention's flash_attn_varlen_func layout, q [total_q, H, D], k and
// v [total_k, KVH, D], and int32 cu_seqlens_q and cu_seqlens_k [batch+1]
// whose differences are the lengths.
//
// The lengths come from the case (seq_q, the longest, and seq_dist), not
// from the seed (package seqlens). Every sequence has seq_k - seq_q more
// keys than queries: a cached prefix, as chunked prefill has, so the
// causal mask's alignment matters. It is bottom-right, FlashAttention's.
package varlen

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/ops/seqlens"
	"github.com/flashcore/bench/sdk"
)

// Name is the op's name in suites, results and the wire.
const Name = "varlen"

// Spec is varlen as data.
var Spec = op.Spec{
	Name: Name,
	Summary: "attention over sequences of different lengths packed end to end (flash_attn_varlen_func's layout), " +
		"bottom-right causal, with a sliding window and logit soft-capping",
	Axes: slices.Concat([]op.Axis{
		{Name: "batch", Kind: op.Int, Doc: "sequences B"},
		{Name: "heads", Kind: op.Int, Doc: "query heads H"},
		{Name: "kv_heads", Kind: op.Int, SameAs: "heads", Doc: "key/value heads; must divide heads (grouped-query attention when fewer)"},
		{Name: "seq_q", Kind: op.Int, Doc: "the longest query sequence"},
		{Name: "seq_k", Kind: op.Int, SameAs: "seq_q", Doc: "the longest key/value sequence: every sequence has seq_k-seq_q more keys than queries (a cached prefix)"},
		{Name: "seq_dist", Kind: op.Choice, Default: seqlens.Uniform, Values: seqlens.Dists,
			Doc: "how query lengths spread over the batch: equal (all seq_q), uniform in [1, seq_q], or long-tail (seq_q·u³); one sequence is always seq_q long"},
		{Name: "head_dim", Kind: op.Int, Doc: "head dimension D"},
		{Name: "dtype", Kind: op.Elem, Default: string(sdk.FP16), Doc: "element type of q, k, v and o"},
		{Name: "causal", Kind: op.Bool, Default: "true", Doc: "bottom-right causal mask: query i of a sequence of Lq queries over Lk keys sits at key position Lk-Lq+i and sees keys j <= Lk-Lq+i"},
	}, mask.Axes(true), []op.Axis{
		{Name: "total_q", Kind: op.Int, Derived: "the sum of the query lengths", Doc: "query rows of the packed batch"},
		{Name: "total_k", Kind: op.Int, Derived: "the sum of the key lengths", Doc: "key/value rows of the packed batch"},
		{Name: "offsets", Kind: op.Int, Derived: "batch + 1", Doc: "entries of cu_seqlens_q and cu_seqlens_k"},
	}),
	Inputs: []op.Tensor{
		{Name: "q", DType: "dtype", Dims: []string{"total_q", "heads", "head_dim"}},
		{Name: "k", DType: "dtype", Dims: []string{"total_k", "kv_heads", "head_dim"}},
		{Name: "v", DType: "dtype", Dims: []string{"total_k", "kv_heads", "head_dim"}},
		// cu_seqlens_q[b] is where sequence b's queries start; the last
		// entry is total_q.
		{Name: "cu_seqlens_q", DType: string(sdk.INT32), Dims: []string{"offsets"}},
		{Name: "cu_seqlens_k", DType: string(sdk.INT32), Dims: []string{"offsets"}},
	},
	Outputs: []op.Tensor{
		{Name: "o", DType: "dtype", Dims: []string{"total_q", "heads", "head_dim"}},
	},
	Roof: op.ComputeRoof,
	Contract: "attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal, scale) -> o " +
		"(and window_left=, window_right=, softcap= where a case sets them)",
	Chart: &op.Chart{X: "seq_q", XLabel: "Longest sequence (tokens)"},
}

// Op is varlen's behaviour.
type Op struct{}

// Spec is the op as data.
func (Op) Spec() op.Spec { return Spec }

// Shape is a varlen case's params, read.
type Shape struct {
	Batch, Heads, KVHeads, SeqQ, SeqK, HeadDim int
	Dist                                       string
	DType                                      sdk.DType
	Mask                                       mask.Mask
}

// ShapeOf reads a case's params.
func ShapeOf(p op.Params) Shape {
	return Shape{Batch: p.Int("batch"), Heads: p.Int("heads"), KVHeads: p.Int("kv_heads"), SeqQ: p.Int("seq_q"),
		SeqK: p.Int("seq_k"), HeadDim: p.Int("head_dim"), Dist: p["seq_dist"], DType: p.DType("dtype"), Mask: mask.Of(p)}
}

// Group is how many query heads share one key/value head.
func (s Shape) Group() int { return s.Heads / s.KVHeads }

// Scale is the softmax scale, 1/sqrt(D).
func (s Shape) Scale() float64 { return 1 / math.Sqrt(float64(s.HeadDim)) }

// Lengths are the query and key lengths of a case's sequences: query
// lengths in [1, seq_q] (package seqlens), each sequence's keys seq_k -
// seq_q more. They depend on batch, seq_q, seq_k and seq_dist alone.
func Lengths(s Shape) (q, k []int) {
	key := fmt.Sprintf("varlen b%d s%d %s", s.Batch, s.SeqQ, s.Dist)
	q = seqlens.Draw(key, s.Batch, 1, s.SeqQ, s.Dist)
	k = make([]int, len(q))
	for b, l := range q {
		k[b] = l + s.SeqK - s.SeqQ
	}
	return q, k
}

// Validate holds the axes to each other.
func (Op) Validate(p op.Params) (string, string) {
	s := ShapeOf(p)
	switch {
	case s.KVHeads > 0 && s.Heads%s.KVHeads != 0:
		return "kv_heads", fmt.Sprintf("%d does not divide heads = %d (each key/value head serves heads/kv_heads query heads)", s.KVHeads, s.Heads)
	case s.SeqK > 0 && s.SeqQ > 0 && s.SeqK < s.SeqQ:
		return "seq_k", fmt.Sprintf("%d is shorter than seq_q = %d: every sequence has at least as many keys as queries", s.SeqK, s.SeqQ)
	}
	return "", ""
}

// Derive sets total_q, total_k and offsets.
func (Op) Derive(p op.Params) {
	s := ShapeOf(p)
	if s.Batch <= 0 || s.SeqQ <= 0 || s.SeqK < s.SeqQ {
		return
	}
	q, k := Lengths(s)
	p["total_q"] = strconv.Itoa(sum(q))
	p["total_k"] = strconv.Itoa(sum(k))
	p["offsets"] = strconv.Itoa(s.Batch + 1)
}

func sum(values []int) int {
	n := 0
	for _, v := range values {
		n += v
	}
	return n
}

// CaseID is varlen-b{B}-h{H}[-kv{KVH}]-s{seq_q}[-sk{seq_k}][-{seq_dist}]-d{D}-{dtype}
// [-noncausal][-w{left}_{right}][-cap{softcap}][-{distribution}]: the
// parts in brackets appear only away from their defaults.
func (Op) CaseID(p op.Params, dist op.Distribution) string {
	s := ShapeOf(p)
	var b strings.Builder
	fmt.Fprintf(&b, "varlen-b%d-h%d", s.Batch, s.Heads)
	if s.KVHeads != s.Heads {
		fmt.Fprintf(&b, "-kv%d", s.KVHeads)
	}
	fmt.Fprintf(&b, "-s%d", s.SeqQ)
	if s.SeqK != s.SeqQ {
		fmt.Fprintf(&b, "-sk%d", s.SeqK)
	}
	if s.Dist != seqlens.Uniform && s.Dist != "" {
		fmt.Fprintf(&b, "-%s", s.Dist)
	}
	fmt.Fprintf(&b, "-d%d-%s", s.HeadDim, s.DType)
	if !s.Mask.Causal {
		b.WriteString("-noncausal")
	}
	b.WriteString(mask.IDSuffix(p))
	if dist != op.Normal && dist != "" {
		fmt.Fprintf(&b, "-%s", dist)
	}
	return strings.ToLower(b.String())
}

// Label is "varlen B8 H32/8 S≤4096 uniform D128 fp16 causal", with
// "+{prefix}" after the length when keys outnumber queries.
func (Op) Label(p op.Params) string {
	s := ShapeOf(p)
	heads := strconv.Itoa(s.Heads)
	if s.KVHeads != s.Heads {
		heads += "/" + strconv.Itoa(s.KVHeads)
	}
	seq := fmt.Sprintf("S≤%d", s.SeqQ)
	if s.Dist == seqlens.Equal {
		seq = fmt.Sprintf("S%d", s.SeqQ)
	}
	if s.SeqK != s.SeqQ {
		seq += fmt.Sprintf("+%d", s.SeqK-s.SeqQ)
	}
	if s.Dist != seqlens.Equal {
		seq += " " + s.Dist
	}
	out := fmt.Sprintf("varlen B%d H%s %s D%d %s", s.Batch, heads, seq, s.HeadDim, s.DType)
	if s.Mask.Causal {
		out += " causal"
	}
	return out + mask.LabelSuffix(p)
}

// Facet puts cases that differ only in seq_q in one chart panel.
func (Op) Facet(p op.Params) op.Facet {
	s := ShapeOf(p)
	name := fmt.Sprintf("b%d-h%d-kv%d-d%d-%s-%s-causal%v%s", s.Batch, s.Heads, s.KVHeads, s.HeadDim, s.DType, s.Dist, s.Mask.Causal, mask.IDSuffix(p))
	title := fmt.Sprintf("B%d H%d/%d D%d %s, %s lengths%s", s.Batch, s.Heads, s.KVHeads, s.HeadDim, s.DType, s.Dist, mask.LabelSuffix(p))
	if s.Mask.Causal {
		title += ", causal"
	}
	return op.Facet{Name: name, Title: title, Order: name}
}

// Generate draws q, k and v from the case's distribution and writes the
// offsets of the case's lengths.
func (Op) Generate(seed uint64, c op.Case) *op.Inputs {
	s := ShapeOf(c.Params)
	qLens, kLens := Lengths(s)
	totalQ, totalK := sum(qLens), sum(kLens)
	return op.NewInputs(
		op.TensorData{Name: "q", DType: s.DType, Dims: []int{totalQ, s.Heads, s.HeadDim},
			Data: inputs.Draw(seed, c.ID, 0, c.Distribution, s.DType, totalQ*s.Heads*s.HeadDim)},
		op.TensorData{Name: "k", DType: s.DType, Dims: []int{totalK, s.KVHeads, s.HeadDim},
			Data: inputs.Draw(seed, c.ID, 1, c.Distribution, s.DType, totalK*s.KVHeads*s.HeadDim)},
		op.TensorData{Name: "v", DType: s.DType, Dims: []int{totalK, s.KVHeads, s.HeadDim},
			Data: inputs.Draw(seed, c.ID, 2, c.Distribution, s.DType, totalK*s.KVHeads*s.HeadDim)},
		op.TensorData{Name: "cu_seqlens_q", DType: sdk.INT32, Dims: []int{s.Batch + 1}, Data: inputs.EncodeInt32s(offsets(qLens))},
		op.TensorData{Name: "cu_seqlens_k", DType: sdk.INT32, Dims: []int{s.Batch + 1}, Data: inputs.EncodeInt32s(offsets(kLens))},
	)
}

// offsets are 0 and the running sums of lengths.
func offsets(lengths []int) []int {
	out := make([]int, len(lengths)+1)
	for i, l := range lengths {
		out[i+1] = out[i] + l
	}
	return out
}

// Check compares o with the fp64 reference on sampled rows, one row per
// (packed query, head): the first and last query of every sequence among
// them, where a kernel that crosses a sequence's boundary or misaligns
// its mask goes wrong first, and more drawn afresh after the output
// exists. The reference finds each sequence through the offsets as the
// backend received them.
func (Op) Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report {
	s := ShapeOf(c.Params)
	ref := newReference(s, in)
	rows := ref.cuQ[s.Batch] * s.Heads
	cost := int64(s.SeqK * s.HeadDim)
	var seed uint64
	if check.RowsSampled(rows, cost, settings) {
		seed = check.FreshSeed()
	}
	checked := check.SampleRows(rows, cost, settings, seed)
	if seed != 0 {
		checked = withSequenceEnds(checked, s, ref.cuQ, seed)
	}
	want := make([][]float64, len(checked))
	reference.Parallel(len(checked), func() func(int) { return func(i int) { want[i] = ref.row(checked[i]) } })
	m := check.Matrix{DType: s.DType, Rows: rows, Cols: s.HeadDim, Checked: checked, RowSeed: seed, Want: want,
		Where: func(row, col int) string {
			t, h := row/s.Heads, row%s.Heads
			b := ref.sequenceOf(t)
			return fmt.Sprintf("[seq %d query %d head %d dim %d]", b, t-ref.cuQ[b], h, col)
		}}
	return []check.Report{check.CheckMatrix(outputs[0], m, tols[0])}
}

// withSequenceEnds adds a row of the first and of the last query of each
// sequence, its head drawn from seed, and returns the rows sorted.
func withSequenceEnds(rows []int, s Shape, cuQ []int, seed uint64) []int {
	picked := map[int]bool{}
	for _, r := range rows {
		picked[r] = true
	}
	draws := inputs.NewStream(seed, "sampled sequence ends", 0)
	for b := range s.Batch {
		for end, t := range []int{cuQ[b], cuQ[b+1] - 1} {
			picked[t*s.Heads+int(draws.Word(2*b+end)%uint64(s.Heads))] = true
		}
	}
	out := make([]int, 0, len(picked))
	for r := range picked {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// Work: 4·D FLOPs per (query row, head, key seen), and q, k, v and o
// read or written once.
func (Op) Work(c op.Case, _ *op.Inputs) op.Work {
	s := ShapeOf(c.Params)
	qLens, kLens := Lengths(s)
	var keys float64
	for b := range qLens {
		for i := range qLens[b] {
			lo, hi := s.Mask.Keys(i, qLens[b], kLens[b])
			keys += float64(max(hi-lo+1, 0))
		}
	}
	size := float64(s.DType.Size())
	totalQ, totalK := float64(sum(qLens)), float64(sum(kLens))
	bytes := (2*totalQ*float64(s.Heads)+2*totalK*float64(s.KVHeads))*float64(s.HeadDim)*size + 8*float64(s.Batch+1)
	return op.Work{FLOPs: 4 * float64(s.HeadDim*s.Heads) * keys, Bytes: bytes}
}

// Unsupported holds a case to a variant's varlen capabilities: dtype,
// head dim, grouped heads, the longest sequence, causal or not, the masks
// it sets, and the size of the packed tensors.
func (Op) Unsupported(caps sdk.Capabilities, p op.Params) string {
	s := ShapeOf(p)
	if reason := caps.UnsupportedDType(s.DType); reason != "" {
		return reason
	}
	switch {
	case len(caps.HeadDims) > 0 && !slices.Contains(caps.HeadDims, s.HeadDim):
		return fmt.Sprintf("head dim %d not supported (supported: %v)", s.HeadDim, caps.HeadDims)
	case s.KVHeads != s.Heads && !caps.GroupedQueryHeads:
		return "grouped-query heads not supported"
	case caps.MaxSeqLen > 0 && s.SeqK > caps.MaxSeqLen:
		return fmt.Sprintf("sequence length %d over the backend's limit of %d", s.SeqK, caps.MaxSeqLen)
	}
	if reason := s.Mask.Unsupported(caps, true); reason != "" {
		return reason
	}
	return caps.OverMaxElements(max(p.Int("total_q")*s.Heads, p.Int("total_k")*s.KVHeads) * s.HeadDim)
}

// Examples are the cases the conformance kit runs on every varlen
// backend: uneven lengths with a sequence of one token, grouped heads and
// a cached prefix under the bottom-right mask, and a plain causal batch,
// in each dtype.
func (Op) Examples() []op.Params {
	base := func(batch, heads, kvHeads, seqQ, seqK, dim int, dist string, dtype sdk.DType) op.Params {
		return op.Params{"batch": strconv.Itoa(batch), "heads": strconv.Itoa(heads), "kv_heads": strconv.Itoa(kvHeads),
			"seq_q": strconv.Itoa(seqQ), "seq_k": strconv.Itoa(seqK), "seq_dist": dist, "head_dim": strconv.Itoa(dim),
			"dtype": string(dtype), "causal": "true", "window_left": "-1", "window_right": "-1", "softcap": "0"}
	}
	var out []op.Params
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		out = append(out,
			base(4, 4, 2, 97, 97, 64, seqlens.LongTail, dtype),
			base(3, 8, 2, 64, 100, 128, seqlens.Uniform, dtype),
			base(2, 4, 4, 130, 130, 64, seqlens.Equal, dtype))
	}
	return out
}
