package cpureference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// attentionCases cover the shapes the capabilities promise: tile multiples
// and odd lengths, causal and not, grouped-query heads, SeqQ < SeqK and
// SeqQ > SeqK, head dims 64 and 128 and one that is not a multiple of 4.
var attentionCases = []struct {
	name   string
	shape  sdk.Shape
	spread float32 // scales Q: wide score ranges make every key block move the running max
}{
	{"tile multiples", shape(1, 2, 2, 64, 64, 64, false), 1},
	{"odd lengths causal", shape(2, 3, 3, 100, 100, 64, true), 1},
	{"gqa seq_q<seq_k causal", shape(1, 8, 2, 77, 130, 64, true), 1},
	{"mqa seq_q>seq_k causal", shape(1, 4, 1, 130, 33, 128, true), 1},
	{"gqa seq_q>seq_k d128", shape(2, 4, 2, 200, 150, 128, false), 1},
	{"single query row", shape(1, 2, 2, 1, 70, 64, false), 1},
	{"single row causal", shape(1, 1, 1, 1, 1, 64, true), 1},
	{"head dim 7", shape(1, 2, 1, 45, 45, 7, true), 1},
	{"wide scores many blocks", shape(1, 2, 2, 33, 300, 64, false), 6},
	{"wide scores causal", shape(1, 2, 2, 300, 300, 128, true), 6},
}

func shape(batch, heads, kvHeads, seqQ, seqK, headDim int, causal bool) sdk.Shape {
	return sdk.Shape{Batch: batch, Heads: heads, KVHeads: kvHeads, SeqQ: seqQ, SeqK: seqK,
		HeadDim: headDim, Causal: causal, DType: sdk.FP32}
}

// The forward pass is checked exactly as flashcore run checks an output:
// the conformance kit's CheckOutput (core/check against the fp64
// reference, the default suite's fp32 tolerance).
func TestAttentionMatchesFP64Reference(t *testing.T) {
	for _, tc := range attentionCases {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				p := randomProblem(tc.shape, tc.spread, 1)
				attentionWith(p, workers)
				if r := conformance.CheckOutput(fp32Tensors(p)); r.Verdict != check.Pass {
					t.Errorf("%s (max abs err %.3g, rel L2 %.3g)", r.Reason, r.MaxAbsErr, r.RelL2Err)
				}
			})
		}
	}
}

// The check above must be able to fail: one element moved by a few units
// in the fourth digit is a FAIL.
func TestCheckCatchesOneWrongElement(t *testing.T) {
	p := randomProblem(shape(1, 2, 2, 33, 40, 64, true), 1, 3)
	attention(p)
	p.out[len(p.out)/2] += 0.01
	if r := conformance.CheckOutput(fp32Tensors(p)); r.Verdict != check.Fail {
		t.Errorf("an output with one element off by 0.01 passed: %+v", r)
	}
}

// fp32Tensors are p's inputs and output as the host and the check see
// them: raw fp32 bytes (float32 values are exact in it).
func fp32Tensors(p problem) (*inputs.Tensors, []byte) {
	raw := func(values []float32) []byte {
		wide := make([]float64, len(values))
		for i, v := range values {
			wide[i] = float64(v)
		}
		return inputs.Encode(sdk.FP32, wide)
	}
	t := &inputs.Tensors{Shape: p.shape, Q: raw(p.q), K: raw(p.k), V: raw(p.v)}
	t.SHA256 = inputs.HashInputs(t.Q, t.K, t.V)
	return t, raw(p.out)
}

// The split into tiles must not change a single bit: each output row is
// computed by one goroutine in a fixed order, whatever the worker count.
func TestAttentionIsDeterministicAcrossWorkerCounts(t *testing.T) {
	p := randomProblem(shape(2, 4, 2, 150, 150, 64, true), 1, 2)
	attentionWith(p, 1)
	single := slices.Clone(p.out)
	for _, workers := range []int{2, 5, 64} {
		clear(p.out)
		attentionWith(p, workers)
		if !slices.Equal(p.out, single) {
			t.Errorf("workers=%d: output differs from the single-worker output", workers)
		}
	}
}

// Every declared tiling passes the check. The query tile size and the
// worker count change only how rows are handed out, so they change no bit;
// the key block size changes the order of the softmax's additions, so it
// may move the last bits, within tolerance.
func TestEveryTilingPassesAndQueryTilesChangeNoBit(t *testing.T) {
	for _, keys := range tunables[1].Values {
		var first []float32
		for _, rows := range tunables[0].Values {
			p := randomProblem(shape(1, 3, 1, 130, 97, 64, true), 4, 5)
			tiles, diags := tilingOf("attention", map[string]string{tunableQueryRows: rows, tunableKeyRows: keys, tunableWorkers: "2"})
			if len(diags) > 0 {
				t.Fatalf("declared values refused: %+v", diags)
			}
			p.tiling = tiles
			attention(p)
			if r := conformance.CheckOutput(fp32Tensors(p)); r.Verdict != check.Pass {
				t.Errorf("query_tile_rows=%s key_block_rows=%s: %s", rows, keys, r.Reason)
			}
			if first == nil {
				first = slices.Clone(p.out)
			} else if !slices.Equal(p.out, first) {
				t.Errorf("query_tile_rows=%s key_block_rows=%s: output differs from query_tile_rows=%s's", rows, keys, tunables[0].Values[0])
			}
		}
	}
}

func TestExp32(t *testing.T) {
	for _, x := range []float32{0, -1e-7, -0.3465, -0.5, -1, -2.5, -10, -20.125, -50, -80, -87.3} {
		got, want := float64(exp32(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 3e-7 {
			t.Errorf("exp32(%g) = %g, want %g (relative error %.2g)", x, got, want, rel)
		}
	}
	for _, x := range []float32{-88, -1000, float32(math.Inf(-1))} {
		if got := exp32(x); got != 0 {
			t.Errorf("exp32(%g) = %g, want 0", x, got)
		}
	}
}

// randomProblem fills Q, K and V with normal values from a fixed seed and
// scales Q by spread.
func randomProblem(s sdk.Shape, spread float32, seed uint64) problem {
	rng := rand.New(rand.NewPCG(seed, 0))
	normal := func(n int, scale float32) []float32 {
		values := make([]float32, n)
		for i := range values {
			values[i] = float32(rng.NormFloat64()) * scale
		}
		return values
	}
	return problem{
		shape: s,
		q:     normal(s.QElements(), spread),
		k:     normal(s.KVElements(), 1),
		v:     normal(s.KVElements(), 1),
		out:   make([]float32, s.QElements()),
	}
}

func BenchmarkAttention(b *testing.B) {
	for _, s := range []sdk.Shape{
		shape(1, 8, 8, 512, 512, 64, false),
		shape(1, 8, 8, 512, 512, 64, true),
		shape(1, 16, 16, 1024, 1024, 128, false),
	} {
		b.Run(s.String(), func(b *testing.B) {
			p := randomProblem(s, 1, 1)
			for b.Loop() {
				attention(p)
			}
			flops := 4 * float64(s.Batch*s.Heads*s.HeadDim*unmaskedPairs(s))
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// unmaskedPairs counts the query–key pairs one head computes: SeqQ·SeqK,
// or with top-left causal masking Σᵢ min(i+1, SeqK).
func unmaskedPairs(s sdk.Shape) int {
	if !s.Causal {
		return s.SeqQ * s.SeqK
	}
	pairs := 0
	for i := range s.SeqQ {
		pairs += min(i+1, s.SeqK)
	}
	return pairs
}
