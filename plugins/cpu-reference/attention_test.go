package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

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

func TestAttentionMatchesFP64Reference(t *testing.T) {
	for _, tc := range attentionCases {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				p := randomProblem(tc.shape, tc.spread, 1)
				attentionWith(p, workers)
				want := referenceAttention(p)
				assertClose(t, p.out, want, 1e-5)
			})
		}
	}
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

// referenceAttention is softmax(Q·Kᵀ/√D)·V written the plain way, in
// float64, with the whole row of scores at once: no tiles, no running max.
func referenceAttention(p problem) []float64 {
	s := p.shape
	d := s.HeadDim
	out := make([]float64, s.QElements())
	scores := make([]float64, s.SeqK)
	for b := range s.Batch {
		for h := range s.Heads {
			qBase := ((b*s.Heads + h) * s.SeqQ) * d
			kvBase := ((b*s.KVHeads + h/(s.Heads/s.KVHeads)) * s.SeqK) * d
			for i := range s.SeqQ {
				visible := s.SeqK
				if s.Causal {
					visible = min(i+1, s.SeqK)
				}
				largest := math.Inf(-1)
				for j := range visible {
					var dot float64
					for x := range d {
						dot += float64(p.q[qBase+i*d+x]) * float64(p.k[kvBase+j*d+x])
					}
					scores[j] = dot * s.Scale()
					largest = max(largest, scores[j])
				}
				var sum float64
				for j := range visible {
					scores[j] = math.Exp(scores[j] - largest)
					sum += scores[j]
				}
				for j := range visible {
					for x := range d {
						out[qBase+i*d+x] += scores[j] / sum * float64(p.v[kvBase+j*d+x])
					}
				}
			}
		}
	}
	return out
}

// assertClose fails unless every element satisfies
// |got − want| ≤ rtol·(|want| + rms(want)): relative to the element, with
// the typical magnitude as the floor for elements near zero.
func assertClose(t *testing.T, got []float32, want []float64, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d elements, want %d", len(got), len(want))
	}
	var squares float64
	for _, w := range want {
		squares += w * w
	}
	rms := math.Sqrt(squares / float64(len(want)))
	bad := 0
	for i := range got {
		if diff := math.Abs(float64(got[i]) - want[i]); !(diff <= rtol*(math.Abs(want[i])+rms)) {
			if bad < 5 {
				t.Errorf("element %d: got %.8g, want %.8g (difference %.3g)", i, got[i], want[i], diff)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements outside tolerance", bad, len(got))
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
