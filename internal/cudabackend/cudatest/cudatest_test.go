package cudatest

import (
	"math"
	"testing"

	"github.com/flashcore/bench/sdk"
)

// With identical keys every visible key gets the same weight, so each output
// row is the mean of the V rows it sees: a reference a test can compute by
// hand, causal and not.
func TestReferenceAveragesValuesWhenKeysAreEqual(t *testing.T) {
	for _, causal := range []bool{false, true} {
		s := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 1, SeqQ: 5, SeqK: 3, HeadDim: 2, Causal: causal, DType: sdk.FP32}
		q := []float64{}
		for i := range s.QElements() {
			q = append(q, float64(i%7)-3)
		}
		k := make([]float64, s.KVElements())
		for i := range k {
			k[i] = 0.5
		}
		v := []float64{1, 10, 2, 20, 3, 30}
		got := reference(s, q, k, v)
		for h := range 2 {
			for i := range 5 {
				seen := 3
				if causal {
					seen = min(i+1, 3)
				}
				for c := range 2 {
					want := 0.0
					for j := range seen {
						want += v[j*2+c] / float64(seen)
					}
					if g := got[(h*5+i)*2+c]; math.Abs(g-want) > 1e-12 {
						t.Errorf("causal=%v head %d row %d col %d: %v, want %v", causal, h, i, c, g, want)
					}
				}
			}
		}
	}
}

func TestEncodeDecodeRoundsToTheDType(t *testing.T) {
	in := []float32{1, -2.5, 0.1, 65504, 1e-8}
	tests := []struct {
		dtype sdk.DType
		want  []float64
	}{
		{sdk.FP16, []float64{1, -2.5, 0.0999755859375, 65504, 0}},
		{sdk.BF16, []float64{1, -2.5, 0.10009765625, 65536, 1.0011717677116394e-08}},
		{sdk.FP32, []float64{1, -2.5, float64(float32(0.1)), 65504, float64(float32(1e-8))}},
	}
	for _, tc := range tests {
		got := decode(tc.dtype, encode(tc.dtype, in))
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v -> %v, want %v", tc.dtype, in[i], got[i], tc.want[i])
			}
		}
	}
}

func TestCompareCountsPoisonAndErrors(t *testing.T) {
	want := []float64{1, 2, 3, 4}
	got := encode(sdk.FP16, []float32{1, 2.5, 3, 4})
	got[6], got[7] = sdk.PoisonByte, sdk.PoisonByte // element 3 unwritten
	e := compare(sdk.FP16, got, want)
	if e.Unwritten != 1 || e.NonFinite != 0 || e.MaxAbs != 0.5 {
		t.Errorf("compare = %+v, want 1 unwritten, 0 non-finite, max abs 0.5", e)
	}
	if e.Within(Tolerances[sdk.FP16]) {
		t.Error("an output with an unwritten element passed")
	}
	if !compare(sdk.FP16, encode(sdk.FP16, []float32{1, 2, 3, 4}), want).Within(Tolerances[sdk.FP16]) {
		t.Error("an exact output failed")
	}
}

func TestCombinationsAndStandardCases(t *testing.T) {
	tunables := []sdk.Tunable{
		{Name: "a", Values: []string{"1", "2"}, Default: "1"},
		{Name: "b", Values: []string{"x", "y", "z"}, Default: "x"},
	}
	if n := len(Combinations(tunables)); n != 6 {
		t.Errorf("%d combinations, want 6", n)
	}
	shapes := len(Shapes(sdk.FP16))
	want := 2*shapes + 5*(shapes+1)
	if n := len(StandardCases(tunables)); n != want {
		t.Errorf("%d standard cases, want %d", n, want)
	}
	if n := len(StandardCases(nil)); n != 2*shapes {
		t.Errorf("%d standard cases without tunables, want %d", n, 2*shapes)
	}
}

func TestFlopsCountsUnmaskedPairs(t *testing.T) {
	s := sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 4, SeqK: 2, HeadDim: 1, Causal: true}
	if got := flops(s); got != 4*(1+2+2+2) {
		t.Errorf("flops = %v, want 28", got)
	}
}
