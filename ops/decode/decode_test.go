package decode

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func params(batch, heads, kvHeads, qLen, dim, page, ctx int, dist string, dtype sdk.DType) op.Params {
	p := op.Params{"batch": itoa(batch), "heads": itoa(heads), "kv_heads": itoa(kvHeads), "q_len": itoa(qLen),
		"head_dim": itoa(dim), "page_size": itoa(page), "context_len": itoa(ctx), "context_dist": dist,
		"dtype": string(dtype), "causal": "true", "window_left": "-1", "softcap": "0"}
	Op{}.Derive(p)
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestLengths(t *testing.T) {
	for _, tc := range []struct {
		dist      string
		meanBelow float64 // the mean length is under this fraction of context_len
	}{{Equal, 1.01}, {Uniform, 0.7}, {LongTail, 0.4}} {
		s := ShapeOf(params(64, 1, 1, 4, 64, 16, 1000, tc.dist, sdk.FP16))
		lengths := Lengths(s)
		if !slices.Equal(lengths, Lengths(s)) {
			t.Errorf("%s: lengths differ between calls", tc.dist)
		}
		if slices.Max(lengths) != 1000 || slices.Min(lengths) < 4 {
			t.Errorf("%s: lengths in [%d, %d], want the longest 1000 and none under q_len 4", tc.dist, slices.Min(lengths), slices.Max(lengths))
		}
		var sum int
		for _, l := range lengths {
			sum += l
		}
		if mean := float64(sum) / 64; mean > tc.meanBelow*1000 {
			t.Errorf("%s: mean length %.0f, want under %.0f", tc.dist, mean, tc.meanBelow*1000)
		}
	}
}

// TestLayout: every page a sequence uses is its own, none is a poison
// page, and every table entry past a sequence's pages is one.
func TestLayout(t *testing.T) {
	s := ShapeOf(params(7, 2, 1, 1, 16, 16, 300, LongTail, sdk.FP16))
	l := NewLayout(42, "case", s)
	if l.NumPages != NumPages(s) || len(l.Poison) != PoisonPages {
		t.Fatalf("%d pages, %d poison, want %d and %d", l.NumPages, len(l.Poison), NumPages(s), PoisonPages)
	}
	seen := map[int]bool{}
	inOrder := true
	for b, length := range l.Lengths {
		for n := range l.MaxPages {
			page := l.Table[b*l.MaxPages+n]
			used := n < (length+s.PageSize-1)/s.PageSize
			if used == slices.Contains(l.Poison, page) {
				t.Errorf("seq %d entry %d: page %d, used %v, poison %v", b, n, page, used, !used)
			}
			if used {
				if seen[page] {
					t.Errorf("page %d used twice", page)
				}
				seen[page] = true
				inOrder = inOrder && page == len(seen)-1
			}
		}
	}
	if inOrder {
		t.Error("the pages are laid out in order; want them scattered")
	}
	if other := NewLayout(43, "case", s); slices.Equal(other.Table, l.Table) {
		t.Error("another seed gave the same table")
	}
}

// compute is a decode written apart from the reference: each sequence's
// keys gathered from the layout into dense rows, then plain attention,
// with a fault to plant.
func compute(s Shape, in *op.Inputs, l Layout, fault string) []byte {
	q := inputs.Decode(s.DType, in.Tensor("q").Data)
	k := inputs.Decode(s.DType, in.Tensor("k_cache").Data)
	v := inputs.Decode(s.DType, in.Tensor("v_cache").Data)
	d := s.HeadDim
	out := make([]float64, len(q))
	for b, length := range l.Lengths {
		for i := range s.QLen {
			for h := range s.Heads {
				kvh := h / s.Group()
				row := ((b*s.QLen+i)*s.Heads + h) * d
				pos := length - s.QLen + i
				lo, hi := 0, length-1
				if s.Mask.Causal {
					hi = pos
				}
				if s.Mask.Left >= 0 {
					lo = max(0, pos-s.Mask.Left)
				}
				switch fault {
				case "top-left":
					hi = i
				case "past-context":
					hi = min(length+s.PageSize, l.MaxPages*s.PageSize) - 1
				case "no-window":
					lo = 0
				}
				at := func(j int) int {
					page := l.Table[b*l.MaxPages+j/s.PageSize]
					if fault == "in-order" {
						page = (b*l.MaxPages + j/s.PageSize) % l.NumPages
					}
					return ((page*s.PageSize+j%s.PageSize)*s.KVHeads + kvh) * d
				}
				var weights []float64
				peak := math.Inf(-1)
				for j := lo; j <= hi; j++ {
					var dot float64
					for e := range d {
						dot += q[row+e] * k[at(j)+e]
					}
					score := dot * s.Scale()
					if s.Mask.Softcap > 0 && fault != "no-softcap" {
						score = s.Mask.Softcap * math.Tanh(score/s.Mask.Softcap)
					}
					weights = append(weights, score)
					peak = max(peak, score)
				}
				var sum float64
				for n := range weights {
					weights[n] = math.Exp(weights[n] - peak)
					sum += weights[n]
				}
				for n, w := range weights {
					for e := range d {
						out[row+e] += w / sum * v[at(lo+n)+e]
					}
				}
			}
		}
	}
	return inputs.Encode(s.DType, out)
}

// TestCheckCatchesPagingFaults: the check passes a correct decode, in
// every dtype and on sampled and full checks, and fails each fault.
func TestCheckCatchesPagingFaults(t *testing.T) {
	cases := []struct {
		name   string
		p      op.Params
		faults []string
	}{
		{"speculative", params(3, 4, 2, 4, 32, 16, 150, Uniform, sdk.FP16), []string{"top-left", "past-context", "in-order"}},
		{"one token", params(5, 8, 1, 1, 64, 32, 200, LongTail, sdk.BF16), []string{"top-left", "past-context", "in-order"}},
		{"fp32", params(2, 2, 2, 2, 16, 16, 40, Uniform, sdk.FP32), []string{"top-left", "in-order"}},
	}
	window := params(2, 2, 1, 3, 32, 16, 120, Uniform, sdk.FP16)
	window["window_left"], window["softcap"] = "10", "5"
	cases = append(cases, struct {
		name   string
		p      op.Params
		faults []string
	}{"window and softcap", window, []string{"no-window", "no-softcap"}})
	for _, tc := range cases {
		c := op.Case{ID: Op{}.CaseID(tc.p, op.Normal), Op: Name, Params: tc.p, Distribution: op.Normal}
		in := Op{}.Generate(9, c)
		s := ShapeOf(tc.p)
		l := NewLayout(9, c.ID, s)
		tol := []op.Tolerance{op.DefaultTolerances()[s.DType]}
		for _, settings := range []op.CheckSettings{op.DefaultCheckSettings(), {FullCheckMaxPairs: 1, SampledRows: 4, Repeat: 1}} {
			if r := (Op{}).Check(c, in, [][]byte{compute(s, in, l, "")}, settings, tol)[0]; r.Verdict != check.Pass {
				t.Errorf("%s: a correct decode: %s %s", tc.name, r.Verdict, r.Reason)
			}
			for _, fault := range tc.faults {
				if r := (Op{}).Check(c, in, [][]byte{compute(s, in, l, fault)}, settings, tol)[0]; r.Verdict != check.Fail {
					t.Errorf("%s %s (sampled %v): %s, want FAIL", tc.name, fault, r.Sampled, r.Verdict)
				}
			}
		}
	}
}

// TestSampleCoversEverySequence: a sampled check compares a row of every
// sequence, however few rows the suite samples.
func TestSampleCoversEverySequence(t *testing.T) {
	s := ShapeOf(params(40, 4, 4, 2, 16, 16, 64, Equal, sdk.FP16))
	rows := withEverySequence([]int{0, 319}, s, 5)
	covered := map[int]bool{}
	for _, r := range rows {
		covered[r/(s.QLen*s.Heads)] = true
	}
	if len(covered) != s.Batch || !slices.IsSorted(rows) {
		t.Errorf("rows %v cover %d sequences, want all %d, sorted", rows, len(covered), s.Batch)
	}
}

func TestWork(t *testing.T) {
	p := params(2, 8, 2, 1, 128, 16, 1024, Equal, sdk.FP16)
	p["causal"] = "false"
	w := Op{}.Work(op.Case{Params: p}, nil)
	kv := 2.0 * 2 * 1024 * 2 * 128 * 2 // batch · K and V · keys · kv heads · dim · bytes
	if want := kv + 2*2*8*128*2 + 4*2*64 + 8; w.Bytes != want {
		t.Errorf("bytes %v, want %v", w.Bytes, want)
	}
	if want := 4.0 * 128 * 8 * 1024 * 2; w.FLOPs != want {
		t.Errorf("FLOPs %v, want %v", w.FLOPs, want)
	}
	p["window_left"] = "99"
	if windowed := (Op{}).Work(op.Case{Params: p}, nil); windowed.Bytes >= w.Bytes/5 {
		t.Errorf("a window of 100 keys reads %v bytes, want about a tenth of %v", windowed.Bytes, w.Bytes)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		change   map[string]string
		key, has string
	}{
		{map[string]string{"kv_heads": "3"}, "kv_heads", "does not divide"},
		{map[string]string{"q_len": "8", "context_len": "4"}, "q_len", "longer than context_len"},
		{map[string]string{"q_len": "65", "context_len": "100"}, "q_len", "use attention"},
		{nil, "", ""},
	} {
		p := params(2, 8, 2, 1, 64, 16, 64, Equal, sdk.FP16)
		for k, v := range tc.change {
			p[k] = v
		}
		key, problem := Op{}.Validate(p)
		if key != tc.key || !strings.Contains(problem, tc.has) {
			t.Errorf("%v: %q %q, want %q containing %q", tc.change, key, problem, tc.key, tc.has)
		}
	}
}

func TestNames(t *testing.T) {
	p := params(32, 32, 8, 4, 128, 16, 8192, Uniform, sdk.BF16)
	p["window_left"], p["softcap"] = "4095", "30"
	if id, want := (Op{}).CaseID(p, op.Outliers), "decode-b32-h32-kv8-q4-c8192-uniform-p16-d128-bf16-w4095-cap30-outliers"; id != want {
		t.Errorf("CaseID %q, want %q", id, want)
	}
	if label, want := (Op{}).Label(p), "decode B32 H32/8 q4 ctx≤8192 uniform page16 D128 bf16 window4095 softcap30"; label != want {
		t.Errorf("Label %q, want %q", label, want)
	}
	if id, want := (Op{}).CaseID(params(3, 5, 1, 1, 128, 16, 8191, Equal, sdk.FP16), op.Normal), "decode-b3-h5-kv1-c8191-p16-d128-fp16"; id != want {
		t.Errorf("CaseID %q, want %q", id, want)
	}
}
