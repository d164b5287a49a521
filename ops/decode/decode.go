// Package decode is attention over a paged KV cache, as a serving stack's
// decode step runs it: a few new query tokens per sequence (q_len 1, or up
// to 16 for speculative decoding) attend to that sequence's cached keys
// and values, which live in fixed-size pages scattered through one pool
// and are found through a block table. The layouts are FlashAttention's
// flash_attn_with_kvcache: q [B, q_len, H, D], k_cache and v_cache
// [num_pages, page_size, KVH, D], block_table [B, max_pages] int32 and
// cache_seqlens [B] int32.
//
// The context lengths come from the case (context_len, the longest, and
// context_dist), not from the seed, so a case reads the same number of
// bytes in every run (Lengths). The seed scatters the pages. Table
// entries past a sequence's last page, and the slots of its last page past
// its length, hold poison (Poison): a kernel that reads them, ignores the
// table, or aligns its causal mask top-left gets a wrong output.
//
// Its work is bandwidth-bound: the bytes a call must read are the keys and
// values the queries see, so `% peak` is of the memory roof.
package decode

import (
	"fmt"
	"math"
	"slices"
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
const Name = "decode"

// The context-length distributions of a batch (the axis context_dist):
// package seqlens's.
const (
	Equal    = seqlens.Equal
	Uniform  = seqlens.Uniform
	LongTail = seqlens.LongTail
)

// PoisonPages is how many pages of the pool hold poison alone: every
// block-table entry past a sequence's last page points at one of them.
const PoisonPages = 2

// Spec is decode as data.
var Spec = op.Spec{
	Name: Name,
	Summary: "attention of q_len new tokens per sequence over a paged KV cache (flash_attn_with_kvcache's layout), " +
		"bottom-right causal, with a sliding window and logit soft-capping",
	Axes: slices.Concat([]op.Axis{
		{Name: "batch", Kind: op.Int, Doc: "sequences B"},
		{Name: "heads", Kind: op.Int, Doc: "query heads H"},
		{Name: "kv_heads", Kind: op.Int, SameAs: "heads", Doc: "key/value heads; must divide heads (grouped-query attention when fewer)"},
		{Name: "q_len", Kind: op.Int, Default: "1", Doc: "new query tokens per sequence (1 for plain decoding, up to 16 for speculative decoding); their keys are already in the cache"},
		{Name: "head_dim", Kind: op.Int, Doc: "head dimension D"},
		{Name: "page_size", Kind: op.Int, Default: "16", Doc: "key/value rows per page of the cache"},
		{Name: "context_len", Kind: op.Int, Doc: "the longest sequence of the batch, in tokens, the new ones included"},
		{Name: "context_dist", Kind: op.Choice, Default: Equal, Values: []string{Equal, Uniform, LongTail},
			Doc: "how lengths spread over the batch: equal (all context_len), uniform in [q_len, context_len], or long-tail (context_len·u³); one sequence is always context_len long"},
		{Name: "dtype", Kind: op.Elem, Default: string(sdk.FP16), Doc: "element type of q, the caches and o"},
		{Name: "causal", Kind: op.Bool, Default: "true", Doc: "bottom-right causal mask: new token i of a sequence of length L sits at position L-q_len+i and sees keys j <= L-q_len+i (FlashAttention's; no effect when q_len is 1)"},
	}, mask.Axes(false), []op.Axis{
		{Name: "max_pages", Kind: op.Int, Derived: "ceil(context_len / page_size)", Doc: "columns of the block table"},
		{Name: "num_pages", Kind: op.Int, Derived: "the pages of every sequence, plus 2 poison pages", Doc: "pages of the pool"},
	}),
	Inputs: []op.Tensor{
		{Name: "q", DType: "dtype", Dims: []string{"batch", "q_len", "heads", "head_dim"}},
		{Name: "k_cache", DType: "dtype", Dims: []string{"num_pages", "page_size", "kv_heads", "head_dim"}},
		{Name: "v_cache", DType: "dtype", Dims: []string{"num_pages", "page_size", "kv_heads", "head_dim"}},
		// block_table[b, n] is the page of the pool that holds keys
		// n·page_size ... (n+1)·page_size-1 of sequence b.
		{Name: "block_table", DType: string(sdk.INT32), Dims: []string{"batch", "max_pages"}},
		// cache_seqlens[b] is sequence b's length L, its q_len new tokens
		// included.
		{Name: "cache_seqlens", DType: string(sdk.INT32), Dims: []string{"batch"}},
	},
	Outputs: []op.Tensor{
		// o may differ between runs in its last bits: split-KV kernels
		// may merge their splits with atomics, and PyTorch's SDPA over
		// the gathered cache differs in a few elements between runs on a
		// H200. A repeated checked run that differs is checked again and
		// the difference recorded as a finding (op.Tensor.MayDiffer).
		{Name: "o", DType: "dtype", Dims: []string{"batch", "q_len", "heads", "head_dim"}, MayDiffer: true},
	},
	Roof:     op.BandwidthRoof,
	Contract: "decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale) -> o (and window_left=, softcap= where a case sets them)",
	Chart:    &op.Chart{X: "context_len", XLabel: "Context length (tokens)"},
}

// Op is decode's behaviour.
type Op struct{}

// Spec is the op as data.
func (Op) Spec() op.Spec { return Spec }

// Shape is a decode case's params, read.
type Shape struct {
	Batch, Heads, KVHeads, QLen, HeadDim int
	PageSize, ContextLen                 int
	Dist                                 string
	DType                                sdk.DType
	// Mask is the case's causal mask, window and soft-capping.
	Mask mask.Mask
}

// ShapeOf reads a case's params.
func ShapeOf(p op.Params) Shape {
	return Shape{
		Batch: p.Int("batch"), Heads: p.Int("heads"), KVHeads: p.Int("kv_heads"), QLen: p.Int("q_len"),
		HeadDim: p.Int("head_dim"), PageSize: p.Int("page_size"), ContextLen: p.Int("context_len"),
		Dist: p["context_dist"], DType: p.DType("dtype"), Mask: mask.Of(p),
	}
}

// Group is how many query heads share one key/value head.
func (s Shape) Group() int { return s.Heads / s.KVHeads }

// MaxPages is the block table's width.
func (s Shape) MaxPages() int { return ceilDiv(s.ContextLen, s.PageSize) }

// Scale is the softmax scale, 1/sqrt(D).
func (s Shape) Scale() float64 { return 1 / math.Sqrt(float64(s.HeadDim)) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Validate holds the axes to each other.
func (Op) Validate(p op.Params) (string, string) {
	s := ShapeOf(p)
	switch {
	case s.KVHeads > 0 && s.Heads%s.KVHeads != 0:
		return "kv_heads", fmt.Sprintf("%d does not divide heads = %d (each key/value head serves heads/kv_heads query heads)", s.KVHeads, s.Heads)
	case s.QLen > 0 && s.ContextLen > 0 && s.QLen > s.ContextLen:
		return "q_len", fmt.Sprintf("%d is longer than context_len = %d (the new tokens are part of the context)", s.QLen, s.ContextLen)
	case s.QLen > MaxQLen:
		return "q_len", fmt.Sprintf("%d is over %d: decode is a few new tokens; use attention for a prefill", s.QLen, MaxQLen)
	}
	return "", ""
}

// MaxQLen bounds q_len: decode's new tokens are a few (speculative
// decoding verifies up to 16 at once).
const MaxQLen = 64

// Derive sets max_pages and num_pages.
func (Op) Derive(p op.Params) {
	s := ShapeOf(p)
	if s.PageSize <= 0 || s.ContextLen <= 0 || s.Batch <= 0 {
		return
	}
	p["max_pages"] = strconv.Itoa(s.MaxPages())
	p["num_pages"] = strconv.Itoa(NumPages(s))
}

// NumPages is the size of the pool: every sequence's pages, and the
// poison pages.
func NumPages(s Shape) int {
	n := PoisonPages
	for _, l := range Lengths(s) {
		n += ceilDiv(l, s.PageSize)
	}
	return n
}

// CaseID is decode-b{B}-h{H}[-kv{KVH}][-q{q_len}]-c{context_len}[-{dist}]-p{page_size}-d{D}-{dtype}
// [-noncausal][-w{window_left}][-cap{softcap}][-{distribution}]: the parts
// in brackets appear only away from their defaults.
func (Op) CaseID(p op.Params, dist op.Distribution) string {
	s := ShapeOf(p)
	var b strings.Builder
	fmt.Fprintf(&b, "decode-b%d-h%d", s.Batch, s.Heads)
	if s.KVHeads != s.Heads {
		fmt.Fprintf(&b, "-kv%d", s.KVHeads)
	}
	if s.QLen != 1 {
		fmt.Fprintf(&b, "-q%d", s.QLen)
	}
	fmt.Fprintf(&b, "-c%d", s.ContextLen)
	if s.Dist != Equal && s.Dist != "" {
		fmt.Fprintf(&b, "-%s", s.Dist)
	}
	fmt.Fprintf(&b, "-p%d-d%d-%s", s.PageSize, s.HeadDim, s.DType)
	if !s.Mask.Causal {
		b.WriteString("-noncausal")
	}
	b.WriteString(mask.IDSuffix(p))
	if dist != op.Normal && dist != "" {
		fmt.Fprintf(&b, "-%s", dist)
	}
	return strings.ToLower(b.String())
}

// Label is "decode B32 H32/8 q1 ctx8192 page16 D128 fp16", with the
// length distribution after the context when it is not equal ("ctx≤8192
// uniform"), and the masks that are set.
func (Op) Label(p op.Params) string {
	s := ShapeOf(p)
	heads := strconv.Itoa(s.Heads)
	if s.KVHeads != s.Heads {
		heads += "/" + strconv.Itoa(s.KVHeads)
	}
	ctx := fmt.Sprintf("ctx%d", s.ContextLen)
	if s.Dist != Equal && s.Dist != "" {
		ctx = fmt.Sprintf("ctx≤%d %s", s.ContextLen, s.Dist)
	}
	out := fmt.Sprintf("decode B%d H%s q%d %s page%d D%d %s", s.Batch, heads, s.QLen, ctx, s.PageSize, s.HeadDim, s.DType)
	if !s.Mask.Causal && s.QLen > 1 {
		out += " non-causal"
	}
	return out + mask.LabelSuffix(p)
}

// Facet puts cases that differ only in context_len in one chart panel.
func (Op) Facet(p op.Params) op.Facet {
	s := ShapeOf(p)
	name := fmt.Sprintf("b%d-h%d-kv%d-q%d-p%d-d%d-%s-%s", s.Batch, s.Heads, s.KVHeads, s.QLen, s.PageSize, s.HeadDim, s.DType, s.Dist)
	title := fmt.Sprintf("B%d H%d/%d q%d page%d D%d %s, %s lengths", s.Batch, s.Heads, s.KVHeads, s.QLen, s.PageSize, s.HeadDim, s.DType, s.Dist)
	return op.Facet{Name: name, Title: title, Order: name}
}

// Lengths are the context lengths of a case's sequences, in [q_len,
// context_len] (package seqlens): they depend on batch, q_len,
// context_len and context_dist alone, not on the seed.
func Lengths(s Shape) []int {
	key := fmt.Sprintf("decode b%d q%d c%d %s", s.Batch, s.QLen, s.ContextLen, s.Dist)
	return seqlens.Draw(key, s.Batch, s.QLen, s.ContextLen, s.Dist)
}

// Poison values: a key slot a kernel must not read holds ±PoisonKey, so
// that its score dominates any row that takes it in, and a value slot
// holds PoisonValue, far from any output a correct kernel writes.
const (
	PoisonKey   = 8
	PoisonValue = 100
)

// Generate draws q and the pool from the case's distribution, scatters
// each sequence's pages through the pool in an order drawn from the seed,
// and poisons every slot no query may read.
func (Op) Generate(seed uint64, c op.Case) *op.Inputs {
	s := ShapeOf(c.Params)
	layout := NewLayout(seed, c.ID, s)
	pageElems := s.PageSize * s.KVHeads * s.HeadDim
	poolElems := layout.NumPages * pageElems
	q := inputs.Draw(seed, c.ID, 0, c.Distribution, s.DType, s.Batch*s.QLen*s.Heads*s.HeadDim)
	k := inputs.Draw(seed, c.ID, 1, c.Distribution, s.DType, poolElems)
	v := inputs.Draw(seed, c.ID, 2, c.Distribution, s.DType, poolElems)
	poison := inputs.NewStream(seed, c.ID, 3)
	size := s.DType.Size()
	// The three poison values, encoded once: +key, -key, value.
	encoded := inputs.Encode(s.DType, []float64{PoisonKey, -PoisonKey, PoisonValue})
	plusKey, minusKey, value := encoded[:size], encoded[size:2*size], encoded[2*size:]
	poisonSlot := func(page, slot int) {
		at := (page*s.PageSize + slot) * s.KVHeads * s.HeadDim
		for e := range s.KVHeads * s.HeadDim {
			key := plusKey
			if poison.Word(at+e)&1 == 1 {
				key = minusKey
			}
			copy(k[(at+e)*size:], key)
			copy(v[(at+e)*size:], value)
		}
	}
	for _, page := range layout.Poison {
		for slot := range s.PageSize {
			poisonSlot(page, slot)
		}
	}
	for b, l := range layout.Lengths {
		if tail := l % s.PageSize; tail != 0 {
			last := layout.Table[b*layout.MaxPages+l/s.PageSize]
			for slot := tail; slot < s.PageSize; slot++ {
				poisonSlot(last, slot)
			}
		}
	}
	return op.NewInputs(
		op.TensorData{Name: "q", DType: s.DType, Dims: []int{s.Batch, s.QLen, s.Heads, s.HeadDim}, Data: q},
		op.TensorData{Name: "k_cache", DType: s.DType, Dims: []int{layout.NumPages, s.PageSize, s.KVHeads, s.HeadDim}, Data: k},
		op.TensorData{Name: "v_cache", DType: s.DType, Dims: []int{layout.NumPages, s.PageSize, s.KVHeads, s.HeadDim}, Data: v},
		op.TensorData{Name: "block_table", DType: sdk.INT32, Dims: []int{s.Batch, layout.MaxPages}, Data: inputs.EncodeInt32s(layout.Table)},
		op.TensorData{Name: "cache_seqlens", DType: sdk.INT32, Dims: []int{s.Batch}, Data: inputs.EncodeInt32s(layout.Lengths)},
	)
}

// Layout is where a case's keys live: each sequence's length, the block
// table, and the poison pages.
type Layout struct {
	Lengths  []int
	MaxPages int
	NumPages int
	// Table is the block table, row-major [batch, max_pages].
	Table []int
	// Poison are the pages that hold poison alone.
	Poison []int
}

// NewLayout scatters a case's pages through the pool: the pool's pages
// are a permutation drawn from the seed, taken in order by sequence 0's
// pages, then sequence 1's, ..., then the poison pages; every table entry
// past a sequence's last page points at a poison page.
func NewLayout(seed uint64, caseID string, s Shape) Layout {
	l := Layout{Lengths: Lengths(s), MaxPages: s.MaxPages(), NumPages: NumPages(s)}
	perm := make([]int, l.NumPages)
	for i := range perm {
		perm[i] = i
	}
	draws := inputs.NewStream(seed, caseID+" pages", 0)
	for i := len(perm) - 1; i > 0; i-- {
		j := int(draws.Word(i) % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	l.Poison = perm[l.NumPages-PoisonPages:]
	l.Table = make([]int, s.Batch*l.MaxPages)
	next := 0
	for b, length := range l.Lengths {
		used := ceilDiv(length, s.PageSize)
		for n := range l.MaxPages {
			if n < used {
				l.Table[b*l.MaxPages+n] = perm[next]
				next++
			} else {
				l.Table[b*l.MaxPages+n] = l.Poison[n%PoisonPages]
			}
		}
	}
	return l
}

// Keys is the range of key positions [lo, hi] that new token i of a
// sequence of length l sees: its q_len queries sit at the end of the
// sequence (mask.Mask.Keys).
func (s Shape) Keys(l, i int) (lo, hi int) { return s.Mask.Keys(i, s.QLen, l) }

// Check compares o with the fp64 reference on sampled rows, one row per
// (sequence, new token, head): at least one row of every sequence, so a
// kernel that reads one sequence's pages wrongly cannot hide, and more
// drawn afresh after the output exists. The reference finds every key
// through the block table and the lengths as the backend received them.
func (Op) Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report {
	s := ShapeOf(c.Params)
	rows := s.Batch * s.QLen * s.Heads
	ref := newReference(s, in)
	var seed uint64
	if check.RowsSampled(rows, int64(s.ContextLen*s.HeadDim), settings) {
		seed = check.FreshSeed()
	}
	checked := check.SampleRows(rows, int64(s.ContextLen*s.HeadDim), settings, seed)
	if seed != 0 {
		checked = withEverySequence(checked, s, seed)
	}
	want := make([][]float64, len(checked))
	reference.Parallel(len(checked), func() func(int) { return func(i int) { want[i] = ref.row(checked[i]) } })
	m := check.Matrix{DType: s.DType, Rows: rows, Cols: s.HeadDim, Checked: checked, RowSeed: seed, Want: want,
		Where: func(row, col int) string {
			h := row % s.Heads
			i := row / s.Heads % s.QLen
			b := row / s.Heads / s.QLen
			return fmt.Sprintf("[seq %d token %d head %d dim %d]", b, i, h, col)
		}}
	return []check.Report{check.CheckMatrix(outputs[0], m, tols[0])}
}

// withEverySequence adds one row of each sequence that the sample missed,
// its token and head drawn from seed, and returns the rows sorted.
func withEverySequence(rows []int, s Shape, seed uint64) []int {
	perSeq := s.QLen * s.Heads
	has := make([]bool, s.Batch)
	picked := make(map[int]bool, len(rows))
	for _, r := range rows {
		has[r/perSeq] = true
		picked[r] = true
	}
	draws := inputs.NewStream(seed, "sampled sequences", 0)
	for b := range has {
		if !has[b] {
			picked[b*perSeq+int(draws.Word(b)%uint64(perSeq))] = true
		}
	}
	out := make([]int, 0, len(picked))
	for r := range s.Batch * perSeq {
		if picked[r] {
			out = append(out, r)
		}
	}
	return out
}

// Work: a call reads the keys and values its queries see (once per
// sequence, however many query heads share them), q, the table entries it
// follows and the lengths, and writes o; its FLOPs are 4·D per (query row,
// head, key seen): the two products of attention.
func (Op) Work(c op.Case, _ *op.Inputs) op.Work {
	s := ShapeOf(c.Params)
	size := float64(s.DType.Size())
	var flops, bytes float64
	for _, l := range Lengths(s) {
		first, last := l, 0
		for i := range s.QLen {
			lo, hi := s.Keys(l, i)
			flops += 4 * float64(s.HeadDim*s.Heads) * float64(hi-lo+1)
			first, last = min(first, lo), max(last, hi)
		}
		keys := float64(last - first + 1)
		bytes += 2 * keys * float64(s.KVHeads*s.HeadDim) * size
		bytes += 4 * float64(last/s.PageSize-first/s.PageSize+1) // table entries
	}
	qo := float64(s.Batch*s.QLen*s.Heads*s.HeadDim) * size
	bytes += 2*qo + 4*float64(s.Batch)
	return op.Work{FLOPs: flops, Bytes: bytes}
}

// Unsupported holds a case to a variant's decode capabilities: dtype,
// head dim, grouped heads, causal or not (when it matters, q_len > 1),
// the masks it sets, and the size of the pool.
func (Op) Unsupported(caps sdk.Capabilities, p op.Params) string {
	s := ShapeOf(p)
	if reason := caps.UnsupportedDType(s.DType); reason != "" {
		return reason
	}
	switch {
	case len(caps.HeadDims) > 0 && !containsInt(caps.HeadDims, s.HeadDim):
		return fmt.Sprintf("head dim %d not supported (supported: %v)", s.HeadDim, caps.HeadDims)
	case s.KVHeads != s.Heads && !caps.GroupedQueryHeads:
		return "grouped-query heads not supported"
	}
	// Causal or not matters to several new tokens alone.
	if reason := s.Mask.Unsupported(caps, s.QLen > 1); reason != "" {
		return reason
	}
	return caps.OverMaxElements(p.Int("num_pages") * s.PageSize * s.KVHeads * s.HeadDim)
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Examples are the cases the conformance kit runs on every decode
// backend, most telling first: one token over uneven lengths with GQA;
// speculative tokens under the bottom-right mask with lengths that end
// mid-page; a page larger than most tiles; each dtype.
func (Op) Examples() []op.Params {
	base := func(batch, heads, kvHeads, qLen, dim, page, ctx int, dist string, dtype sdk.DType) op.Params {
		return op.Params{"batch": strconv.Itoa(batch), "heads": strconv.Itoa(heads), "kv_heads": strconv.Itoa(kvHeads),
			"q_len": strconv.Itoa(qLen), "head_dim": strconv.Itoa(dim), "page_size": strconv.Itoa(page),
			"context_len": strconv.Itoa(ctx), "context_dist": dist, "dtype": string(dtype), "causal": "true",
			"window_left": "-1", "softcap": "0"}
	}
	var out []op.Params
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		out = append(out,
			base(3, 8, 2, 1, 64, 16, 333, Uniform, dtype),
			base(2, 4, 4, 4, 128, 16, 200, Uniform, dtype),
			base(2, 8, 1, 1, 128, 64, 300, LongTail, dtype))
	}
	return out
}
