package check

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// naiveGradients is attention's backward written out the plain way, over
// whole matrices in float64, apart from core/reference: for each query
// head, S = scale·Q·Kᵀ with the top-left causal mask, P = exp(S − lse)
// with the lse the backend was given, dP = dO·Vᵀ, Δ = rowsum(dO∘O),
// dS = P∘(dP − Δ), dQ = scale·dS·K, and into the key/value head of the
// group dK += scale·dSᵀ·Q and dV += Pᵀ·dO. Layouts are the op's.
type naiveGradients struct {
	dq, dk, dv []float64
}

func naiveBackward(s sdk.Shape, q, k, v, o, do, lse []float64) naiveGradients {
	d, sq, sk := s.HeadDim, s.SeqQ, s.SeqK
	scale := 1 / math.Sqrt(float64(d))
	g := naiveGradients{dq: make([]float64, len(q)), dk: make([]float64, len(k)), dv: make([]float64, len(v))}
	at := func(m []float64, head, row, col, rows int) *float64 { return &m[(head*rows+row)*d+col] }
	p, dp := make([]float64, sq*sk), make([]float64, sq*sk)
	for b := range s.Batch {
		for h := range s.Heads {
			head := b*s.Heads + h
			kv := b*s.KVHeads + h/(s.Heads/s.KVHeads)
			for i := range sq {
				for j := range sk {
					p[i*sk+j], dp[i*sk+j] = 0, 0
					if s.Causal && j > i {
						continue
					}
					var score float64
					for x := range d {
						score += *at(q, head, i, x, sq) * *at(k, kv, j, x, sk)
						dp[i*sk+j] += *at(do, head, i, x, sq) * *at(v, kv, j, x, sk)
					}
					p[i*sk+j] = math.Exp(scale*score - lse[head*sq+i])
				}
			}
			for i := range sq {
				var delta float64
				for x := range d {
					delta += *at(do, head, i, x, sq) * *at(o, head, i, x, sq)
				}
				for j := range sk {
					ds := p[i*sk+j] * (dp[i*sk+j] - delta)
					for x := range d {
						*at(g.dq, head, i, x, sq) += scale * ds * *at(k, kv, j, x, sk)
						*at(g.dk, kv, j, x, sk) += scale * ds * *at(q, head, i, x, sq)
						*at(g.dv, kv, j, x, sk) += p[i*sk+j] * *at(do, head, i, x, sq)
					}
				}
			}
		}
	}
	return g
}

// backwardCase is a case of mode bwd as the host makes it: Q, K, V and dO
// generated, O and lse the exact forward's rounded to the dtype and to
// fp32, and the reference backward of core/reference on them; with the
// gradients of the naive backward above, in float64.
func backwardCase(b, h, kv, sq, sk, d int, causal bool, dtype sdk.DType) (*reference.Gradients, naiveGradients) {
	s := sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk, HeadDim: d, Causal: causal, DType: dtype, Mode: sdk.Backward}
	t := inputs.Generate(7, attention.NewCase(s, op.Normal))
	exact := reference.ComputeForward(t)
	o := inputs.Decode(dtype, inputs.Encode(dtype, exact.O))
	lse := inputs.Decode(sdk.FP32, inputs.Encode(sdk.FP32, exact.LSE))
	g := reference.NewGradients(t, o, lse)
	naive := naiveBackward(s, inputs.Decode(dtype, t.Q), inputs.Decode(dtype, t.K), inputs.Decode(dtype, t.V), o, inputs.Decode(dtype, t.DO), lse)
	return g, naive
}

// gradientTolerances are the default tolerances of the dtype times each
// gradient's factor, as op.Spec.Tolerances resolves them.
func gradientTolerances(dtype sdk.DType) GradientTolerances {
	tol := op.DefaultTolerances()[dtype]
	f := attention.GradientToleranceFactor
	return GradientTolerances{DQ: tol.Times(f["dq"]), DK: tol.Times(f["dk"]), DV: tol.Times(f["dv"])}
}

// fault plants one wrong gradient in honest ones (float64, the op's
// layouts) of shape s; the seed is the check's row seed, for the faults
// that know which rows are checked.
type fault struct {
	name  string
	plant func(s sdk.Shape, g *naiveGradients, seed uint64, settings op.CheckSettings)
	// output and reason are what the FAIL must name: the failing report,
	// and a part of its reason ("" for any).
	output string
	reason string
	// needs says whether the fault can be planted in s checked with
	// settings (wrong-group needs two key/value heads).
	needs func(s sdk.Shape, settings op.CheckSettings) bool
}

// noise adds ±amplitude, the sign drawn from a fixed seed, to every
// element of dQ.
func noise(amplitude float64) func(sdk.Shape, *naiveGradients, uint64, op.CheckSettings) {
	return func(_ sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) {
		random := rand.New(rand.NewPCG(5, 5))
		for i := range g.dq {
			g.dq[i] += amplitude * (2*float64(random.IntN(2)) - 1)
		}
	}
}

var faults = []fault{
	{name: "zero dK", output: "dk", reason: "output is all zeros",
		plant: func(_ sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) { clear(g.dk) }},
	{name: "NaN in dQ", output: "dq", reason: "output has 1 NaN",
		plant: func(_ sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) { g.dq[len(g.dq)/3] = math.NaN() }},
	{name: "dK and dV swapped", output: "dk",
		plant: func(_ sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) { g.dk, g.dv = g.dv, g.dk }},
	{name: "dK of group 0 written to group 1", output: "dk",
		needs: func(s sdk.Shape, _ op.CheckSettings) bool { return s.KVHeads >= 2 },
		plant: func(s sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) {
			n := s.SeqK * s.HeadDim
			for b := range s.Batch {
				first := b * s.KVHeads * n
				copy(g.dk[first+n:first+2*n], g.dk[first:first+n])
			}
		}},
	{name: "dK transposed within each head", output: "dk",
		plant: func(s sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) {
			n, d := s.SeqK*s.HeadDim, s.HeadDim
			transposed := make([]float64, len(g.dk))
			for head := range len(g.dk) / n {
				for j := range s.SeqK {
					for x := range d {
						transposed[head*n+x*s.SeqK+j] = g.dk[head*n+j*d+x]
					}
				}
			}
			g.dk = transposed
		}},
	// Gradients are held to the forward's tolerances (factor 1): noise of
	// 1e-2 on a dQ whose rms is about 0.1 to 0.3, as here, is a relative
	// L2 error of 3e-2 to 1e-1, above bf16's 1.6e-2 and fp16's 2e-3.
	{name: "1e-2 noise in dQ", output: "dq", plant: noise(1e-2)},
	{name: "8e-2 noise in dQ", output: "dq", plant: noise(8e-2)},
	{name: "dV of half the key rows, the rest zero", output: "dv",
		plant: func(s sdk.Shape, g *naiveGradients, _ uint64, _ op.CheckSettings) {
			d := s.HeadDim
			for row := range len(g.dv) / d {
				if row%s.SeqK >= s.SeqK/2 {
					clear(g.dv[row*d : (row+1)*d])
				}
			}
		}},
	{name: "dV of the sampled key rows alone, the rest zero", output: "dv", reason: "column sums of dV differ",
		needs: func(s sdk.Shape, settings op.CheckSettings) bool { return reference.Sampled(s, settings) },
		plant: func(s sdk.Shape, g *naiveGradients, seed uint64, settings op.CheckSettings) {
			d := s.HeadDim
			checked := map[int]bool{}
			for _, r := range reference.KVRows(s, settings, seed) {
				checked[r.Flat(s)] = true
			}
			for row := range len(g.dv) / d {
				if !checked[row] {
					clear(g.dv[row*d : (row+1)*d])
				}
			}
		}},
}

// sampledSettings check a case of a few thousand pairs on a sample of its
// rows, as the default settings check a long sequence.
var sampledSettings = op.CheckSettings{FullCheckMaxPairs: 4096, SampledRows: 16, Repeat: 2}

// The check of the gradients passes honest ones, computed apart from the
// reference, and fails each planted fault on the output it is in, in
// fp16 and bf16, causal and not, with grouped-query heads, and on a case
// checked on a sample of rows, where dV computed on the sampled key rows
// alone is caught by the column-sum invariant.
func TestCheckGradientsPassesHonestAndFailsPlanted(t *testing.T) {
	shapes := []struct {
		name                string
		b, h, kv, sq, sk, d int
		causal              bool
		settings            op.CheckSettings
		seed                uint64
	}{
		{"gqa", 1, 4, 2, 40, 56, 32, false, op.DefaultCheckSettings(), 0},
		{"gqa causal odd lengths", 2, 4, 2, 37, 53, 16, true, op.DefaultCheckSettings(), 0},
		{"mha causal seq_q>seq_k", 1, 2, 2, 45, 29, 16, true, op.DefaultCheckSettings(), 0},
		{"sampled gqa causal", 1, 4, 2, 200, 200, 32, true, sampledSettings, 0x5eed},
	}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		for _, sh := range shapes {
			g, honest := backwardCase(sh.b, sh.h, sh.kv, sh.sq, sh.sk, sh.d, sh.causal, dtype)
			s := g.T.Shape
			if reference.Sampled(s, sh.settings) != (sh.seed != 0) {
				t.Fatalf("%s: sampled %v, but the case's seed is %#x", sh.name, reference.Sampled(s, sh.settings), sh.seed)
			}
			tols := gradientTolerances(dtype)
			check := func(g *reference.Gradients, out naiveGradients) [3]Report {
				return CheckGradientsWithSeed(g, Gradients{DQ: inputs.Encode(dtype, out.dq), DK: inputs.Encode(dtype, out.dk), DV: inputs.Encode(dtype, out.dv)},
					sh.settings, tols, sh.seed)
			}
			t.Run(string(dtype)+"/"+sh.name+"/honest", func(t *testing.T) {
				for i, r := range check(g, honest) {
					if r.Verdict != Pass {
						t.Errorf("%s: %s %s", []string{"dq", "dk", "dv"}[i], r.Verdict, r.Reason)
					}
					if r.Sampled != (sh.seed != 0) || (r.Sampled && r.RowSeed != sh.seed) {
						t.Errorf("%s: sampled %v with row seed %#x, want sampled %v with %#x", []string{"dq", "dk", "dv"}[i], r.Sampled, r.RowSeed, sh.seed != 0, sh.seed)
					}
				}
			})
			for _, f := range faults {
				if f.needs != nil && !f.needs(s, sh.settings) {
					continue
				}
				t.Run(string(dtype)+"/"+sh.name+"/"+f.name, func(t *testing.T) {
					planted := naiveGradients{dq: slices.Clone(honest.dq), dk: slices.Clone(honest.dk), dv: slices.Clone(honest.dv)}
					f.plant(s, &planted, sh.seed, sh.settings)
					reports := check(g, planted)
					failed := map[string]Report{}
					for i, r := range reports {
						if r.Verdict != Pass {
							failed[[]string{"dq", "dk", "dv"}[i]] = r
						}
					}
					r, ok := failed[f.output]
					if !ok || !strings.Contains(r.Reason, f.reason) {
						t.Errorf("%s: %s %q, want FAIL with a reason containing %q (failed: %v)", f.output, r.Verdict, r.Reason, f.reason, failed)
					}
				})
			}
		}
	}
}

// A case of few query rows and many keys is checked on every query row
// and a sample of key rows: the sample of dK and dV must come from a fresh
// seed, recorded, not from the seed 0 that stands for "every row".
func TestCheckGradientsDrawsASeedWhenOnlyKeyRowsAreSampled(t *testing.T) {
	g, honest := backwardCase(1, 2, 2, 8, 1000, 16, false, sdk.FP16)
	settings := op.CheckSettings{FullCheckMaxPairs: 8192, SampledRows: 16, Repeat: 2}
	reports := CheckGradients(g, Gradients{DQ: inputs.Encode(sdk.FP16, honest.dq), DK: inputs.Encode(sdk.FP16, honest.dk),
		DV: inputs.Encode(sdk.FP16, honest.dv)}, settings, gradientTolerances(sdk.FP16))
	if r := reports[0]; r.Verdict != Pass || r.Sampled {
		t.Errorf("dq: %s, sampled %v; want a PASS on every row", r.Verdict, r.Sampled)
	}
	for i, r := range reports[1:] {
		if r.Verdict != Pass || !r.Sampled || r.RowSeed == 0 {
			t.Errorf("%s: %s, sampled %v with row seed %#x; want a PASS on a sample drawn from a fresh seed", []string{"dk", "dv"}[i], r.Verdict, r.Sampled, r.RowSeed)
		}
	}
}

// The naive backward and the reference agree far inside every tolerance:
// the honest gradients are a check of the reference as much as of the
// check.
func TestNaiveBackwardMatchesReference(t *testing.T) {
	g, naive := backwardCase(1, 4, 2, 23, 31, 8, true, sdk.FP32)
	s := g.T.Shape
	all := op.CheckSettings{FullCheckMaxPairs: math.MaxInt64, SampledRows: 2}
	dq := g.DQ(reference.Rows(s, all, 0))
	dk, dv := g.DKV(reference.KVRows(s, all, 0))
	for _, m := range []struct {
		name  string
		want  [][]float64
		naive []float64
	}{{"dq", dq, naive.dq}, {"dk", dk, naive.dk}, {"dv", dv, naive.dv}} {
		for row, values := range m.want {
			for x, want := range values {
				if got := m.naive[row*s.HeadDim+x]; math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
					t.Fatalf("%s row %d col %d: naive %g, reference %g", m.name, row, x, got, want)
				}
			}
		}
	}
}
