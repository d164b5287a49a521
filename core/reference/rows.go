package reference

import (
	"github.com/flashcore/bench/core/suite"
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

// Rows returns the query rows to check, in layout order: every row when
// the shape has at most settings.FullCheckMaxPairs pairs, else
// settings.SampledRows rows.
//
// Sampled rows are stratified: the B·H·Sq rows are cut into SampledRows
// equal runs and one row is taken from each, at a position within the run
// that a hash of the run's number chooses. The sample so covers every part
// of the batch and of the heads, always includes the first and the last
// row, and does not fall into step with tile sizes (an even stride would
// land, say, on row 0 of every 128-row tile and never on a tile's edge).
func Rows(s sdk.Shape, settings suite.CheckSettings) []RowIndex {
	total := s.Batch * s.Heads * s.SeqQ
	if Pairs(s) <= settings.FullCheckMaxPairs || total <= settings.SampledRows {
		rows := make([]RowIndex, total)
		for i := range rows {
			rows[i] = rowAt(s, i)
		}
		return rows
	}
	n := max(settings.SampledRows, 2)
	rows := make([]RowIndex, n)
	for k := range rows {
		rows[k] = rowAt(s, sampledRow(k, n, total))
	}
	return rows
}

// sampledRow picks the row of run k of n over total rows.
func sampledRow(k, n, total int) int {
	switch k {
	case 0:
		return 0
	case n - 1:
		return total - 1
	}
	start := int(int64(k) * int64(total) / int64(n))
	end := int(int64(k+1) * int64(total) / int64(n))
	return start + int(scramble(uint64(k))%uint64(end-start))
}

// scramble is SplitMix64's output function, a cheap fixed hash.
func scramble(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
