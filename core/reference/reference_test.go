package reference

import (
	"math"
	"slices"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func shape(b, h, kv, sq, sk, d int, causal bool, dtype sdk.DType) sdk.Shape {
	return sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk, HeadDim: d, Causal: causal, DType: dtype}
}

var everyRow = op.CheckSettings{FullCheckMaxPairs: math.MaxInt64, SampledRows: 2}

// naive is attention written as the formula reads, over whole decoded
// tensors, without the max-subtraction: fine for the small values here.
func naive(t *inputs.Tensors) [][]float64 {
	s := t.Shape
	q, k, v := inputs.Decode(s.DType, t.Q), inputs.Decode(s.DType, t.K), inputs.Decode(s.DType, t.V)
	d := s.HeadDim
	var out [][]float64
	for b := 0; b < s.Batch; b++ {
		for h := 0; h < s.Heads; h++ {
			kvh := h * s.KVHeads / s.Heads
			for i := 0; i < s.SeqQ; i++ {
				qi := q[((b*s.Heads+h)*s.SeqQ+i)*d:][:d]
				weights := make([]float64, s.SeqK)
				var total float64
				for j := 0; j < s.SeqK; j++ {
					if s.Causal && j > i {
						continue
					}
					kj := k[((b*s.KVHeads+kvh)*s.SeqK+j)*d:][:d]
					var score float64
					for x := range d {
						score += qi[x] * kj[x]
					}
					weights[j] = math.Exp(score / math.Sqrt(float64(d)))
					total += weights[j]
				}
				row := make([]float64, d)
				for j, w := range weights {
					vj := v[((b*s.KVHeads+kvh)*s.SeqK+j)*d:][:d]
					for x := range d {
						row[x] += w / total * vj[x]
					}
				}
				out = append(out, row)
			}
		}
	}
	return out
}

func TestComputeMatchesNaive(t *testing.T) {
	shapes := []sdk.Shape{
		shape(1, 2, 2, 16, 16, 8, false, sdk.FP16),
		shape(2, 4, 2, 24, 40, 16, true, sdk.BF16),  // GQA, Sq < Sk, causal
		shape(1, 4, 1, 40, 24, 8, true, sdk.FP32),   // MQA, Sq > Sk, causal
		shape(1, 3, 3, 33, 17, 32, false, sdk.FP16), // odd sizes
	}
	for _, s := range shapes {
		for _, dist := range []op.Distribution{op.Normal, op.Outliers} {
			tensors := inputs.Generate(5, attention.NewCase(s, dist))
			got := Compute(tensors, Rows(s, everyRow, 0))
			want := naive(tensors)
			if len(got) != len(want) {
				t.Fatalf("%v: %d rows, want %d", s, len(got), len(want))
			}
			for i := range got {
				for x := range got[i] {
					w := want[i][x]
					if math.Abs(got[i][x]-w) > 1e-12*(1+math.Abs(w)) {
						t.Fatalf("%v %s row %d elem %d: %v, naive %v", s, dist, i, x, got[i][x], w)
					}
				}
			}
		}
	}
}

// tensorsOf builds fp32 tensors from explicit values.
func tensorsOf(s sdk.Shape, q, k, v []float64) *inputs.Tensors {
	return &inputs.Tensors{Shape: s, Q: inputs.Encode(s.DType, q), K: inputs.Encode(s.DType, k), V: inputs.Encode(s.DType, v)}
}

func TestComputeByHand(t *testing.T) {
	e := math.E
	tests := []struct {
		name    string
		shape   sdk.Shape
		q, k, v []float64
		want    [][]float64
	}{
		{
			name:  "two keys, weights 1/(1+e) and e/(1+e)",
			shape: shape(1, 1, 1, 1, 2, 1, false, sdk.FP32),
			q:     []float64{1}, k: []float64{0, 1}, v: []float64{0, 1},
			want: [][]float64{{e / (1 + e)}},
		},
		{
			name:  "equal scores average V; causal rows average the keys they see",
			shape: shape(1, 1, 1, 3, 3, 2, true, sdk.FP32),
			q:     make([]float64, 6), k: []float64{1, 2, 3, 4, 5, 6}, v: []float64{1, 10, 2, 20, 6, 60},
			want: [][]float64{{1, 10}, {1.5, 15}, {3, 30}},
		},
		{
			name:  "causal with Sq > Sk: rows past the last key see every key",
			shape: shape(1, 1, 1, 3, 2, 1, true, sdk.FP32),
			q:     []float64{0, 0, 0}, k: []float64{1, 1}, v: []float64{2, 4},
			want: [][]float64{{2}, {3}, {3}},
		},
		{
			name:  "scores of 10000 do not overflow",
			shape: shape(1, 1, 1, 1, 2, 1, false, sdk.FP32),
			q:     []float64{100}, k: []float64{100, 99}, v: []float64{7, -7},
			want: [][]float64{{7 - 14/(1+math.Exp(100))}},
		},
		{
			name:  "grouped heads: heads 0,1 read kv head 0; heads 2,3 read kv head 1",
			shape: shape(1, 4, 2, 1, 2, 1, false, sdk.FP32),
			q:     []float64{0.5, -1, 2, 0}, k: []float64{1, 2, 3, 4}, v: []float64{1, 1, 2, 2},
			want: [][]float64{{1}, {1}, {2}, {2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute(tensorsOf(tc.shape, tc.q, tc.k, tc.v), Rows(tc.shape, everyRow, 0))
			for i := range tc.want {
				for x, w := range tc.want[i] {
					if math.Abs(got[i][x]-w) > 1e-14*(1+math.Abs(w)) {
						t.Errorf("row %d elem %d = %.17g, want %.17g", i, x, got[i][x], w)
					}
				}
			}
		})
	}
}

func TestRowsFull(t *testing.T) {
	s := shape(2, 3, 3, 5, 7, 8, false, sdk.FP16)
	rows := Rows(s, op.CheckSettings{FullCheckMaxPairs: Pairs(s), SampledRows: 4}, 7)
	if len(rows) != 2*3*5 {
		t.Fatalf("%d rows, want every one of 30", len(rows))
	}
	for i, r := range rows {
		if r.Flat(s) != i {
			t.Fatalf("row %d is %+v (flat %d)", i, r, r.Flat(s))
		}
	}
}

func TestRowsSampled(t *testing.T) {
	s := shape(2, 16, 16, 4096, 4096, 128, true, sdk.FP16)
	settings := op.CheckSettings{FullCheckMaxPairs: 1 << 26, SampledRows: 256}
	rows := Rows(s, settings, 42)
	// 8 draws in each of 32 heads, 3 edge rows in each, and the last
	// query block of the first and the last head.
	if want := 256 + 3*32 + 2*EdgeBlock; len(rows) < want-24 || len(rows) > want {
		t.Fatalf("%d rows, want about %d (8 draws and 3 edges in each of 32 heads, and 2 last blocks)", len(rows), want)
	}
	for head := range s.Batch * s.Heads {
		for _, row := range []int{0, s.SeqQ - 1} {
			flat := head*s.SeqQ + row
			if !slices.ContainsFunc(rows, func(r RowIndex) bool { return r.Flat(s) == flat }) {
				t.Errorf("head %d: row %d is not checked", head, row)
			}
		}
	}
	total := s.Batch * s.Heads * s.SeqQ
	if rows[0].Flat(s) != 0 || rows[len(rows)-1].Flat(s) != total-1 {
		t.Errorf("first %+v last %+v, want the first and the last row", rows[0], rows[len(rows)-1])
	}
	heads := map[[2]int]int{}
	residues := map[int]bool{}
	for i, r := range rows {
		if i > 0 && r.Flat(s) <= rows[i-1].Flat(s) {
			t.Fatalf("rows out of order at %d", i)
		}
		heads[[2]int{r.Batch, r.Head}]++
		residues[r.Row%64] = true
	}
	if len(heads) != s.Batch*s.Heads {
		t.Errorf("sample covers %d of %d (batch, head) pairs", len(heads), s.Batch*s.Heads)
	}
	if len(residues) < 32 {
		t.Errorf("sampled rows fall on only %d positions within a 64-row tile", len(residues))
	}
	if again := Rows(s, settings, 42); !slices.Equal(again, rows) {
		t.Error("the same seed drew other rows")
	}
	other := Rows(s, settings, 43)
	shared := 0
	for _, r := range other {
		if _, found := slices.BinarySearchFunc(rows, r, func(a, b RowIndex) int { return a.Flat(s) - b.Flat(s) }); found {
			shared++
		}
	}
	// Every head's first and last row and the last blocks of two heads
	// are fixed; the rest follows the seed.
	fixed := 2*s.Batch*s.Heads + 2*EdgeBlock
	if shared > fixed+8 {
		t.Errorf("seeds 42 and 43 share %d of %d rows, %d of them fixed: the sample should follow the seed", shared, len(rows), fixed)
	}
}

// TestComputeSampledIsCheap computes sampled rows of a case whose full
// reference would take minutes: cost O(rows·Sk·D).
func TestComputeSampledIsCheap(t *testing.T) {
	s := shape(1, 8, 8, 8192, 8192, 64, true, sdk.FP16)
	tensors := inputs.Generate(1, attention.NewCase(s, op.Normal))
	rows := Rows(s, op.CheckSettings{FullCheckMaxPairs: 1 << 20, SampledRows: 64}, 1)
	out := Compute(tensors, rows)
	if len(out) < 60 || len(out[0]) != 64 {
		t.Fatalf("%d rows", len(out))
	}
	// Row 0 of a causal case sees only key 0: its output is V's row 0.
	v0 := inputs.Decode(s.DType, tensors.V[:64*2])
	if !slices.Equal(out[0], v0) {
		t.Errorf("causal row 0 = %v, want V row 0 = %v", out[0][:4], v0[:4])
	}
}

// A reference row is computed once per inputs: a second ComputeKept over
// rows some of which it has seen returns the kept rows, and the same
// values as Compute.
func TestComputeKeepsRowsPerInputs(t *testing.T) {
	s := shape(1, 2, 2, 24, 40, 16, true, sdk.FP16)
	tensors := inputs.Generate(5, attention.NewCase(s, op.Normal))
	all := Rows(s, everyRow, 0)
	first := ComputeKept(tensors, all[:10])
	again := ComputeKept(tensors, all)
	fresh := Compute(tensors, all)
	for i := range all {
		if i < 10 && &again[i][0] != &first[i][0] {
			t.Errorf("row %d computed again", i)
		}
		for x := range again[i] {
			if again[i][x] != fresh[i][x] {
				t.Fatalf("row %d elem %d: kept %v, computed afresh %v", i, x, again[i][x], fresh[i][x])
			}
		}
	}
}
