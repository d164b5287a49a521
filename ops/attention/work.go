package attention

import (
	"fmt"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// FLOPs is the work of one call under mask m (MaskOf; mask.Plain for a
// shape alone). A forward pass is 4·B·H·D per unmasked (query, key) pair,
// 2·D for the score q·k and 2·D for adding p·v. Masking is counted
// exactly: top-left causal query row i has min(i+1, Sk) pairs, and under
// any other mask each row counts the keys mask.Keys gives it (none for a
// row that sees none). Soft-capping and the softmax are not counted, as
// is the convention of published attention figures. A backward pass
// counts BackwardFactor times the forward (FlashAttention's convention:
// five matrix products of the forward's two's size, the recomputed
// scores among them), so mode fwd+bwd counts 1 + BackwardFactor times.
func FLOPs(s sdk.Shape, m mask.Mask) float64 {
	forward := 4 * float64(s.Batch) * float64(s.Heads) * float64(s.HeadDim) * float64(unmaskedPairs(s, m))
	switch s.Mode.Or() {
	case sdk.Backward:
		return BackwardFactor * forward
	case sdk.ForwardBackward:
		return (1 + BackwardFactor) * forward
	}
	return forward
}

// BackwardFactor is the FLOPs of a backward pass in forward passes: 2.5,
// as FlashAttention counts.
const BackwardFactor = 2.5

// unmaskedPairs is the number of (i, j) pairs of one head that attend:
// in closed form for no mask and top-left causal, else row by row.
func unmaskedPairs(s sdk.Shape, m mask.Mask) int64 {
	sq, sk := int64(s.SeqQ), int64(s.SeqK)
	if !m.Prefix(s.SeqQ, s.SeqK) {
		var pairs int64
		for i := range s.SeqQ {
			lo, hi := m.Keys(i, s.SeqQ, s.SeqK)
			pairs += int64(max(hi-lo+1, 0))
		}
		return pairs
	}
	if !s.Causal {
		return sq * sk
	}
	// Rows i < Sk see i+1 keys; the rows after see all Sk.
	full := min(sq, sk)
	return full*(full+1)/2 + (sq-full)*sk
}

// Bytes is the least memory traffic of one call, each tensor once: a
// forward reads Q, K and V and writes O; a backward reads Q, K, V, O, dO
// and the fp32 LSE and writes dQ, dK and dV; fwd+bwd reads Q, K, V and dO
// and writes O, dQ, dK and dV.
func Bytes(s sdk.Shape) float64 {
	size := float64(s.DType.Size())
	switch s.Mode.Or() {
	case sdk.Backward:
		return float64(4*s.QElements()+4*s.KVElements())*size + float64(4*s.Batch*s.Heads*s.SeqQ)
	case sdk.ForwardBackward:
		return float64(4*s.QElements()+4*s.KVElements()) * size
	}
	return float64(2*s.QElements()+2*s.KVElements()) * size
}

// WorkNote says what a backward case's FLOPs count, for the title of its
// TFLOP/s column: BackwardFactor forwards ("bwd = 2.5× fwd"), or one more
// in fwd+bwd; "" for the forward.
func WorkNote(p op.Params) string {
	switch sdk.Mode(p["mode"]).Or() {
	case sdk.Backward:
		return fmt.Sprintf("bwd = %g× fwd", BackwardFactor)
	case sdk.ForwardBackward:
		return fmt.Sprintf("%g× fwd", 1+BackwardFactor)
	}
	return ""
}
