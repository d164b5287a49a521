package varlen

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/seqlens"
	"github.com/flashcore/bench/sdk"
)

func params(batch, heads, kvHeads, seqQ, seqK, dim int, dist string, dtype sdk.DType) op.Params {
	p := op.Params{"batch": strconv.Itoa(batch), "heads": strconv.Itoa(heads), "kv_heads": strconv.Itoa(kvHeads),
		"seq_q": strconv.Itoa(seqQ), "seq_k": strconv.Itoa(seqK), "seq_dist": dist, "head_dim": strconv.Itoa(dim),
		"dtype": string(dtype), "causal": "true", "window_left": "-1", "window_right": "-1", "softcap": "0"}
	Op{}.Derive(p)
	return p
}

// compute is a varlen written apart from the reference, from the lengths
// the case declares rather than the offsets it received, with a fault to
// plant.
func compute(s Shape, in *op.Inputs, fault string) []byte {
	q := inputs.Decode(s.DType, in.Tensor("q").Data)
	k := inputs.Decode(s.DType, in.Tensor("k").Data)
	v := inputs.Decode(s.DType, in.Tensor("v").Data)
	qLens, kLens := Lengths(s)
	if fault == "one-sequence" { // ignores the offsets: one long sequence
		qLens, kLens = []int{sum(qLens)}, []int{sum(kLens)}
	}
	d := s.HeadDim
	out := make([]float64, len(q))
	startQ, startK := 0, 0
	for b := range qLens {
		for i := range qLens[b] {
			for h := range s.Heads {
				m := s.Mask
				switch fault {
				case "no-window":
					m.Left, m.Right = -1, -1
				case "no-softcap":
					m.Softcap = 0
				}
				lo, hi := m.Keys(i, qLens[b], kLens[b])
				if fault == "top-left" && m.Causal {
					hi = min(i, kLens[b]-1)
				}
				row := ((startQ+i)*s.Heads + h) * d
				at := func(j int) int { return ((startK+j)*s.KVHeads + h/s.Group()) * d }
				var weights []float64
				peak := math.Inf(-1)
				for j := lo; j <= hi; j++ {
					var dot float64
					for e := range d {
						dot += q[row+e] * k[at(j)+e]
					}
					weights = append(weights, m.Score(dot*s.Scale()))
					peak = max(peak, weights[len(weights)-1])
				}
				var total float64
				for n := range weights {
					weights[n] = math.Exp(weights[n] - peak)
					total += weights[n]
				}
				for n, w := range weights {
					for e := range d {
						out[row+e] += w / total * v[at(lo+n)+e]
					}
				}
			}
		}
		startQ, startK = startQ+qLens[b], startK+kLens[b]
	}
	return inputs.Encode(s.DType, out)
}

// TestCheckCatchesPackingFaults: the check passes a correct varlen, on
// full and sampled checks, and fails a kernel that attends across
// sequences, aligns its mask top-left, or drops the window or softcap.
func TestCheckCatchesPackingFaults(t *testing.T) {
	prefix := params(3, 4, 2, 40, 70, 32, seqlens.Uniform, sdk.FP16)
	masked := params(4, 2, 1, 50, 50, 16, seqlens.LongTail, sdk.BF16)
	masked["window_left"], masked["window_right"], masked["softcap"] = "7", "3", "2"
	masked["causal"] = "false"
	fp32 := params(2, 2, 2, 30, 30, 16, seqlens.Equal, sdk.FP32)
	for _, tc := range []struct {
		name   string
		p      op.Params
		faults []string
	}{
		{"prefix", prefix, []string{"one-sequence", "top-left"}},
		{"masked", masked, []string{"one-sequence", "no-window", "no-softcap"}},
		{"fp32", fp32, []string{"one-sequence"}},
	} {
		c := op.Case{ID: Op{}.CaseID(tc.p, op.Normal), Op: Name, Params: tc.p, Distribution: op.Normal}
		in := Op{}.Generate(3, c)
		s := ShapeOf(tc.p)
		tol := []op.Tolerance{op.DefaultTolerances()[s.DType]}
		for _, settings := range []op.CheckSettings{op.DefaultCheckSettings(), {FullCheckMaxPairs: 1, SampledRows: 4, Repeat: 1}} {
			if r := (Op{}).Check(c, in, [][]byte{compute(s, in, "")}, settings, tol)[0]; r.Verdict != check.Pass {
				t.Errorf("%s: a correct varlen: %s %s", tc.name, r.Verdict, r.Reason)
			}
			for _, fault := range tc.faults {
				if r := (Op{}).Check(c, in, [][]byte{compute(s, in, fault)}, settings, tol)[0]; r.Verdict != check.Fail {
					t.Errorf("%s %s (sampled %v): %s, want FAIL", tc.name, fault, r.Sampled, r.Verdict)
				}
			}
		}
	}
}

func TestLengthsAndDerivedSizes(t *testing.T) {
	p := params(16, 8, 2, 300, 364, 64, seqlens.LongTail, sdk.FP16)
	q, k := Lengths(ShapeOf(p))
	for b := range q {
		if q[b] < 1 || q[b] > 300 || k[b] != q[b]+64 {
			t.Errorf("seq %d: %d queries, %d keys, want 1..300 and 64 more keys", b, q[b], k[b])
		}
	}
	if p["total_q"] != strconv.Itoa(sum(q)) || p["total_k"] != strconv.Itoa(sum(k)) || p["offsets"] != "17" {
		t.Errorf("derived %s %s %s, want %d %d 17", p["total_q"], p["total_k"], p["offsets"], sum(q), sum(k))
	}
}

func TestWorkCountsTheKeysEachRowSees(t *testing.T) {
	p := params(1, 2, 2, 4, 6, 8, seqlens.Equal, sdk.FP16)
	// 4 queries over 6 keys, bottom-right: rows see 3, 4, 5 and 6 keys.
	if w := (Op{}).Work(op.Case{Params: p}, nil); w.FLOPs != 4*8*2*18 {
		t.Errorf("FLOPs %v, want %v", w.FLOPs, 4*8*2*18)
	}
}

func TestValidateAndNames(t *testing.T) {
	p := params(8, 32, 8, 4096, 4096, 128, seqlens.Uniform, sdk.BF16)
	if key, problem := (Op{}).Validate(p); key != "" {
		t.Errorf("Validate: %q %q", key, problem)
	}
	short := p.Clone()
	short["seq_k"] = "100"
	if key, problem := (Op{}).Validate(short); key != "seq_k" || !strings.Contains(problem, "shorter than seq_q") {
		t.Errorf("Validate seq_k < seq_q: %q %q", key, problem)
	}
	p["window_left"], p["window_right"] = "1024", "0"
	if id, want := (Op{}).CaseID(p, op.Normal), "varlen-b8-h32-kv8-s4096-d128-bf16-w1024_0"; id != want {
		t.Errorf("CaseID %q, want %q", id, want)
	}
	if label, want := (Op{}).Label(p), "varlen B8 H32/8 S≤4096 uniform D128 bf16 causal window1024,0"; label != want {
		t.Errorf("Label %q, want %q", label, want)
	}
}
