package reference

import (
	"math/rand/v2"
	"slices"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// RowIndex names one query row: output row Row of head Head of batch
// entry Batch.
type RowIndex struct {
	Batch, Head, Row int
}

// Flat is the row's index among all B·H·Sq query rows, in layout order; its
// first element is element Flat·D of Q and of the output.
func (r RowIndex) Flat(s sdk.Shape) int {
	return (r.Batch*s.Heads+r.Head)*s.SeqQ + r.Row
}

// rowAt is the inverse of Flat.
func rowAt(s sdk.Shape, flat int) RowIndex {
	return RowIndex{Batch: flat / (s.Heads * s.SeqQ), Head: flat / s.SeqQ % s.Heads, Row: flat % s.SeqQ}
}

// Pairs is the number of (query, key) pairs of the shape, B·H·Sq·Sk, the
// figure the check settings compare with.
func Pairs(s sdk.Shape) int64 {
	return int64(s.Batch) * int64(s.Heads) * int64(s.SeqQ) * int64(s.SeqK)
}

// Sampled reports whether the shape is checked on a sample of its rows
// rather than on every row.
func Sampled(s sdk.Shape, settings op.CheckSettings) bool {
	return Pairs(s) > settings.FullCheckMaxPairs && s.Batch*s.Heads*s.SeqQ > settings.SampledRows
}

// Rows returns the query rows to check, in layout order: every row when
// the shape has at most settings.FullCheckMaxPairs pairs, else a random
// sample drawn from seed.
//
// The sample is what keeps a backend from computing only the rows that will
// be checked: the host draws seed at random after the backend's output is
// in hand, so nothing the backend can see beforehand (the shape, the suite,
// the command line) predicts the rows. Every (batch, head) gets
// ceil(SampledRows / (B·H)) draws, at least one, uniform over its Sq rows
// (a row drawn twice is checked once). The edges, where kernels go wrong,
// are always among them (EdgeRows): every head's first and last row, one
// row drawn from every head's last query block, and the whole last query
// block of the first and the last head. The same seed gives the same rows,
// so a recorded seed re-checks a saved output exactly.
func Rows(s sdk.Shape, settings op.CheckSettings, seed uint64) []RowIndex {
	total := s.Batch * s.Heads * s.SeqQ
	if !Sampled(s, settings) {
		rows := make([]RowIndex, total)
		for i := range rows {
			rows[i] = rowAt(s, i)
		}
		return rows
	}
	heads := s.Batch * s.Heads
	perHead := min(max((settings.SampledRows+heads-1)/heads, 1), s.SeqQ)
	flat := edgeRows(s, seed)
	for head := range heads {
		random := rand.New(rand.NewPCG(seed, uint64(head)))
		for range perHead {
			flat = append(flat, head*s.SeqQ+random.IntN(s.SeqQ))
		}
	}
	slices.Sort(flat)
	flat = slices.Compact(flat)
	rows := make([]RowIndex, len(flat))
	for i, f := range flat {
		rows[i] = rowAt(s, f)
	}
	return rows
}

// EdgeBlock is the query block whose last instance every sampled check
// covers: the tile height of most attention kernels (64; 128-row tiles end
// on the same 64-row boundary). A sequence length that is not a multiple of
// it leaves a partial last block, where masking and bounds go wrong.
const EdgeBlock = 64

// edgeRows are the flat indices of the rows a sampled check always takes:
// every head's first and last row and one row of its last query block
// (drawn from seed), and every row of the last query block of the first
// and the last head.
func edgeRows(s sdk.Shape, seed uint64) []int {
	heads := s.Batch * s.Heads
	lastBlock := (s.SeqQ - 1) / EdgeBlock * EdgeBlock
	random := rand.New(rand.NewPCG(seed, ^uint64(0)))
	var flat []int
	for head := range heads {
		base := head * s.SeqQ
		flat = append(flat, base, base+s.SeqQ-1, base+lastBlock+random.IntN(s.SeqQ-lastBlock))
	}
	for _, head := range []int{0, heads - 1} {
		for row := lastBlock; row < s.SeqQ; row++ {
			flat = append(flat, head*s.SeqQ+row)
		}
	}
	return flat
}
