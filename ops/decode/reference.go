package decode

import (
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
)

// pagedReference computes rows of o in fp64 from the inputs as stored, finding
// every key through the block table and the lengths the backend received:
// the paging is done here, independently of any backend.
type pagedReference struct {
	s        Shape
	q, k, v  []byte
	table    []int
	lengths  []int
	maxPages int
}

func newReference(s Shape, in *op.Inputs) *pagedReference {
	return &pagedReference{s: s, q: in.Tensor("q").Data, k: in.Tensor("k_cache").Data, v: in.Tensor("v_cache").Data,
		table: inputs.DecodeInt32s(in.Tensor("block_table").Data), lengths: inputs.DecodeInt32s(in.Tensor("cache_seqlens").Data),
		maxPages: in.Tensor("block_table").Dims[1]}
}

// row is output row r of o [batch, q_len, heads, head_dim], seen as
// batch·q_len·heads rows of head_dim.
func (r *pagedReference) row(row int) []float64 {
	s := r.s
	d, size := s.HeadDim, s.DType.Size()
	h := row % s.Heads
	i := row / s.Heads % s.QLen
	b := row / s.Heads / s.QLen
	kvh := h / s.Group()
	q := make([]float64, d)
	inputs.DecodeInto(q, s.DType, r.q[row*d*size:(row+1)*d*size])
	lo, hi := s.Keys(r.lengths[b], i)
	// at is the byte offset of key position j's row for head kvh.
	at := func(j int) int {
		page := r.table[b*r.maxPages+j/s.PageSize]
		return ((page*s.PageSize+j%s.PageSize)*s.KVHeads + kvh) * d * size
	}
	return reference.AttendRow(s.DType, q, r.k, r.v, lo, hi, at, s.Scale(), s.Mask.Score)
}
