package varlen

import (
	"sort"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
)

// packedReference computes rows of o in fp64 from the inputs as stored, finding
// each sequence through the offsets the backend received: the packing is
// undone here, independently of any backend.
type packedReference struct {
	s        Shape
	q, k, v  []byte
	cuQ, cuK []int
}

func newReference(s Shape, in *op.Inputs) *packedReference {
	return &packedReference{s: s, q: in.Tensor("q").Data, k: in.Tensor("k").Data, v: in.Tensor("v").Data,
		cuQ: inputs.DecodeInt32s(in.Tensor("cu_seqlens_q").Data), cuK: inputs.DecodeInt32s(in.Tensor("cu_seqlens_k").Data)}
}

// sequenceOf is the sequence packed query row t belongs to.
func (r *packedReference) sequenceOf(t int) int {
	return sort.SearchInts(r.cuQ, t+1) - 1
}

// row is output row r of o [total_q, heads, head_dim], seen as
// total_q·heads rows of head_dim.
func (r *packedReference) row(row int) []float64 {
	s := r.s
	d, size := s.HeadDim, s.DType.Size()
	t, h := row/s.Heads, row%s.Heads
	b := r.sequenceOf(t)
	kvh := h / s.Group()
	q := make([]float64, d)
	inputs.DecodeInto(q, s.DType, r.q[row*d*size:(row+1)*d*size])
	lo, hi := s.Mask.Keys(t-r.cuQ[b], r.cuQ[b+1]-r.cuQ[b], r.cuK[b+1]-r.cuK[b])
	at := func(j int) int { return ((r.cuK[b]+j)*s.KVHeads + kvh) * d * size }
	return reference.AttendRow(s.DType, q, r.k, r.v, lo, hi, at, s.Scale(), s.Mask.Score)
}
