package attention

import (
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

func shape(b, h, kv, sq, sk, d int, causal bool, dtype sdk.DType) sdk.Shape {
	return sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk, HeadDim: d, Causal: causal, DType: dtype}
}

func moded(s sdk.Shape, m sdk.Mode) sdk.Shape {
	s.Mode = m
	return s
}

func TestFLOPsAndBytes(t *testing.T) {
	tests := []struct {
		shape sdk.Shape
		flops float64
		bytes float64
	}{
		// 4·1·8·64·512² = 536870912; 4 tensors of 262144 fp16 elements.
		{shape(1, 8, 8, 512, 512, 64, false, sdk.FP16), 536870912, 4 * 262144 * 2},
		// Causal: 512·513/2 pairs per head.
		{shape(1, 8, 8, 512, 512, 64, true, sdk.FP16), 4 * 8 * 64 * 131328, 4 * 262144 * 2},
		// Sq < Sk causal: rows see 1..Sq keys.
		{shape(1, 1, 1, 3, 5, 2, true, sdk.FP32), 4 * 2 * 6, (2*3*2 + 2*5*2) * 4},
		// Sq > Sk causal: rows 0..4 see 1..5 keys, rows 5..6 see 5.
		{shape(1, 1, 1, 7, 5, 2, true, sdk.BF16), 4 * 2 * 25, (2*7*2 + 2*5*2) * 2},
		// GQA: K and V are smaller.
		{shape(2, 8, 2, 100, 300, 128, false, sdk.FP16), 4 * 2 * 8 * 128 * 30000, (2*2*8*100*128 + 2*2*2*300*128) * 2},
		// Backward: 2.5 forwards; Q, O, dO, dQ and K, V, dK, dV once each,
		// and the fp32 LSE.
		{moded(shape(1, 8, 8, 512, 512, 64, false, sdk.FP16), sdk.Backward), 2.5 * 536870912, 8*262144*2 + 8*512*4},
		{moded(shape(1, 8, 8, 512, 512, 64, true, sdk.FP16), sdk.Backward), 2.5 * 4 * 8 * 64 * 131328, 8*262144*2 + 8*512*4},
		// fwd+bwd: 3.5 forwards; no LSE crosses the call's boundary.
		{moded(shape(2, 8, 2, 100, 300, 128, false, sdk.BF16), sdk.ForwardBackward), 3.5 * 4 * 2 * 8 * 128 * 30000, (4*2*8*100*128 + 4*2*2*300*128) * 2},
	}
	for _, tc := range tests {
		if got := FLOPs(tc.shape, mask.Plain(tc.shape.Causal)); got != tc.flops {
			t.Errorf("FLOPs(%v) = %v, want %v", tc.shape, got, tc.flops)
		}
		if got := Bytes(tc.shape); got != tc.bytes {
			t.Errorf("Bytes(%v) = %v, want %v", tc.shape, got, tc.bytes)
		}
	}
}

// TestCausalPairsCountedExactly compares the closed form with the sum.
func TestCausalPairsCountedExactly(t *testing.T) {
	for _, sq := range []int{1, 2, 7, 64, 100} {
		for _, sk := range []int{1, 3, 64, 99, 200} {
			var want int64
			for i := range sq {
				want += int64(min(i+1, sk))
			}
			if got := unmaskedPairs(shape(1, 1, 1, sq, sk, 1, true, sdk.FP16), mask.Plain(true)); got != want {
				t.Errorf("Sq %d Sk %d: %d pairs, want %d", sq, sk, got, want)
			}
		}
	}
}

func TestWorkNote(t *testing.T) {
	for mode, want := range map[string]string{"": "", "fwd": "", "bwd": "bwd = 2.5× fwd", "fwd+bwd": "3.5× fwd"} {
		if got := WorkNote(op.Params{"mode": mode}); got != want {
			t.Errorf("mode %q: %q, want %q", mode, got, want)
		}
	}
}
