package attention

import "github.com/flashcore/bench/sdk"

// FLOPs is the work of one attention forward pass: 4·B·H·D per unmasked
// (query, key) pair, 2·D for the score q·k and 2·D for adding p·v. Causal
// masking (top-left) is counted exactly: query row i has min(i+1, Sk)
// pairs. The softmax is not counted, as is the convention of published
// attention figures.
func FLOPs(s sdk.Shape) float64 {
	return 4 * float64(s.Batch) * float64(s.Heads) * float64(s.HeadDim) * float64(unmaskedPairs(s))
}

// unmaskedPairs is the number of (i, j) pairs of one head that attend.
func unmaskedPairs(s sdk.Shape) int64 {
	sq, sk := int64(s.SeqQ), int64(s.SeqK)
	if !s.Causal {
		return sq * sk
	}
	// Rows i < Sk see i+1 keys; the rows after see all Sk.
	full := min(sq, sk)
	return full*(full+1)/2 + (sq-full)*sk
}

// Bytes is the least memory traffic of one pass: reading Q, K and V and
// writing O, once each.
func Bytes(s sdk.Shape) float64 {
	return float64(2*s.QElements()+2*s.KVElements()) * float64(s.DType.Size())
}
