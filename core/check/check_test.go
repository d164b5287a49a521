package check

import (
	"math"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var (
	settings   = op.DefaultCheckSettings()
	tolerances = op.DefaultTolerances()
)

func testCase(b, h, kv, sq, sk, d int, causal bool, dtype sdk.DType, dist op.Distribution) *inputs.Tensors {
	s := sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk, HeadDim: d, Causal: causal, DType: dtype}
	return inputs.Generate(99, attention.NewCase(s, dist))
}

// correctOutput is what a perfect kernel writes: the reference rounded to
// the dtype.
func correctOutput(t *inputs.Tensors) []float64 {
	all := op.CheckSettings{FullCheckMaxPairs: math.MaxInt64, SampledRows: 2}
	var flat []float64
	for _, row := range reference.Compute(t, reference.Rows(t.Shape, all, 0)) {
		flat = append(flat, row...)
	}
	return flat
}

func TestCorrectOutputPasses(t *testing.T) {
	cases := []*inputs.Tensors{
		testCase(1, 8, 8, 128, 128, 64, false, sdk.FP16, op.Normal),
		testCase(1, 4, 2, 96, 160, 64, true, sdk.FP16, op.Outliers),
		testCase(2, 2, 1, 80, 48, 32, true, sdk.BF16, op.Uniform),
		testCase(1, 2, 2, 64, 64, 128, false, sdk.FP32, op.Normal),
	}
	for _, tc := range cases {
		dtype := tc.Shape.DType
		r := Check(tc, inputs.Encode(dtype, correctOutput(tc)), settings, tolerances[dtype])
		if r.Verdict != Pass || r.Sampled || r.RowsChecked != r.RowsTotal {
			t.Errorf("%v: %+v", tc.Shape, r)
		}
		// Rounding to the dtype is the only error: at most half an ulp.
		if halfULP := map[sdk.DType]float64{sdk.FP16: 0x1p-11, sdk.BF16: 0x1p-8, sdk.FP32: 0x1p-24}[dtype]; r.RelL2Err > halfULP {
			t.Errorf("%v: rel_l2 %g above half an ulp %g", tc.Shape, r.RelL2Err, halfULP)
		}
	}
}

func TestWrongOutputsFail(t *testing.T) {
	tc := testCase(1, 4, 2, 128, 128, 64, true, sdk.FP16, op.Normal)
	s := tc.Shape
	good := correctOutput(tc)
	tests := []struct {
		name   string
		output []byte
		reason string
		check  func(Report) bool
	}{
		{"wrong size", inputs.Encode(s.DType, good[:len(good)-1]), "wrong output size", nil},
		{"all zeros", make([]byte, len(good)*2), "output is all zeros", nil},
		{"rows shifted by 16", inputs.Encode(s.DType, shiftRows(s, good, 16)), "", nil},
		{"rows shifted by 64", inputs.Encode(s.DType, shiftRows(s, good, 64)), "", nil},
		{"one element poisoned", poison(inputs.Encode(s.DType, good), 2, 1234), "1 of 32768 output elements unwritten",
			func(r Report) bool { return r.Unwritten == 1 && r.NaN == 0 }},
		{"one NaN", setBits(inputs.Encode(s.DType, good), 777, 0x7E00), "output has 1 NaN and 0 Inf",
			func(r Report) bool { return r.NaN == 1 }},
		{"one Inf", setBits(inputs.Encode(s.DType, good), 778, 0xFC00), "output has 0 NaN and 1 Inf",
			func(r Report) bool { return r.Inf == 1 }},
		{"one element off", inputs.Encode(s.DType, nudge(good, 4000, 0.05)), "1 of 32768 checked elements exceed atol + rtol·|ref|; worst at [b0 h0 q62 d32] (element 4000)",
			func(r Report) bool { return r.Violations == 1 && r.RelL2Err <= tolerances[sdk.FP16].RelL2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tc, tt.output, settings, tolerances[s.DType])
			if r.Verdict != Fail || !strings.Contains(r.Reason, tt.reason) || (tt.check != nil && !tt.check(r)) {
				t.Errorf("report %+v, want FAIL with reason containing %q", r, tt.reason)
			}
			t.Log(r.Reason)
		})
	}
}

func TestSmallErrorsPass(t *testing.T) {
	tc := testCase(1, 2, 2, 64, 64, 64, false, sdk.FP16, op.Normal)
	good := correctOutput(tc)
	tol := tolerances[sdk.FP16]
	// Just inside the element bound.
	ref := good[100]
	nudged := nudge(good, 100, 0.9*(tol.Atol+tol.Rtol*math.Abs(ref)))
	if r := Check(tc, inputs.Encode(sdk.FP16, nudged), settings, tol); r.Verdict != Pass {
		t.Errorf("%+v", r)
	}
}

// TestSampledCheck shows a large case is checked on a sample of rows that
// covers every head and both ends, yet an unwritten element outside the
// sample is still found.
func TestSampledCheck(t *testing.T) {
	tc := testCase(2, 8, 8, 256, 256, 64, false, sdk.FP16, op.Normal)
	sampled := op.CheckSettings{FullCheckMaxPairs: 1 << 16, SampledRows: 32}
	output := inputs.Encode(sdk.FP16, correctOutput(tc))
	r := Check(tc, output, sampled, tolerances[sdk.FP16])
	if r.Verdict != Pass || !r.Sampled || r.RowSeed == 0 || r.RowsChecked < 16+3*16 || r.RowsChecked > 34+3*16+2*reference.EdgeBlock || r.RowsTotal != 2*8*256 {
		t.Errorf("%+v", r)
	}
	checked := map[int]bool{}
	for _, row := range reference.Rows(tc.Shape, sampled, r.RowSeed) {
		checked[row.Flat(tc.Shape)] = true
	}
	unchecked := 1
	for checked[unchecked] {
		unchecked++
	}
	r = CheckWithSeed(tc, poison(output, 2, unchecked*64+5), sampled, tolerances[sdk.FP16], r.RowSeed)
	if r.Verdict != Fail || r.Unwritten != 1 {
		t.Errorf("poison outside the sample: %+v", r)
	}
}

// TestPredictedRowsFail is the backend that computes only the rows it
// expects to be checked and copies them elsewhere: every value it writes
// is a plausible attention output (inside the range of V), so only rows it
// could not predict catch it.
func TestPredictedRowsFail(t *testing.T) {
	tc := testCase(1, 4, 4, 512, 512, 64, false, sdk.FP16, op.Normal)
	sampled := op.CheckSettings{FullCheckMaxPairs: 1 << 16, SampledRows: 64}
	good := correctOutput(tc)
	s, d := tc.Shape, tc.Shape.HeadDim
	predicted := reference.Rows(s, sampled, 12345)
	lie := make([]float64, len(good))
	for flat := range s.Batch * s.Heads * s.SeqQ {
		// Every row holds some predicted row of its head.
		p := predicted[flat*len(predicted)/(s.Batch*s.Heads*s.SeqQ)]
		copy(lie[flat*d:(flat+1)*d], good[p.Flat(s)*d:][:d])
	}
	for _, p := range predicted {
		copy(lie[p.Flat(s)*d:][:d], good[p.Flat(s)*d:][:d])
	}
	output := inputs.Encode(sdk.FP16, lie)
	if r := CheckWithSeed(tc, output, sampled, tolerances[sdk.FP16], 12345); r.Verdict != Pass {
		t.Fatalf("on the predicted rows the lie should pass: %+v", r)
	}
	for try := range 3 {
		if r := Check(tc, output, sampled, tolerances[sdk.FP16]); r.Verdict != Fail {
			t.Errorf("try %d: fresh rows passed the lie: %+v", try, r)
		}
	}
}

// TestOutOfRangeFails: one element of a row the sample skips, outside the
// range of V over its keys, fails the whole-output bound.
func TestOutOfRangeFails(t *testing.T) {
	for _, causal := range []bool{false, true} {
		tc := testCase(1, 2, 1, 256, 256, 32, causal, sdk.FP16, op.Normal)
		sampled := op.CheckSettings{FullCheckMaxPairs: 1 << 10, SampledRows: 4}
		good := correctOutput(tc)
		r := Check(tc, inputs.Encode(sdk.FP16, good), sampled, tolerances[sdk.FP16])
		if r.Verdict != Pass || r.OutOfRange != 0 {
			t.Fatalf("causal %v: correct output: %+v", causal, r)
		}
		checked := map[int]bool{}
		for _, row := range reference.Rows(tc.Shape, sampled, r.RowSeed) {
			checked[row.Flat(tc.Shape)] = true
		}
		row := 3
		for checked[row] {
			row++
		}
		// Row 3 of a causal head sees 4 keys; 50 is far outside any V.
		bad := nudge(good, row*32+7, 50)
		r = CheckWithSeed(tc, inputs.Encode(sdk.FP16, bad), sampled, tolerances[sdk.FP16], r.RowSeed)
		if r.Verdict != Fail || r.OutOfRange != 1 || !strings.Contains(r.Reason, "outside the range of V") {
			t.Errorf("causal %v: %+v", causal, r)
		}
	}
}

// shiftRows moves every row of each head down by n (cyclically), as a
// kernel that writes one tile to the wrong place.
func shiftRows(s sdk.Shape, out []float64, n int) []float64 {
	shifted := make([]float64, len(out))
	d := s.HeadDim
	for head := 0; head < s.Batch*s.Heads; head++ {
		for i := 0; i < s.SeqQ; i++ {
			from := (head*s.SeqQ + (i+n)%s.SeqQ) * d
			copy(shifted[(head*s.SeqQ+i)*d:][:d], out[from:from+d])
		}
	}
	return shifted
}

func poison(data []byte, size, element int) []byte {
	for i := range size {
		data[element*size+i] = sdk.PoisonByte
	}
	return data
}

func setBits(data []byte, element int, bits uint16) []byte {
	data[2*element], data[2*element+1] = byte(bits), byte(bits>>8)
	return data
}

func nudge(out []float64, i int, by float64) []float64 {
	c := append([]float64(nil), out...)
	c[i] += by
	return c
}

func TestCountSpecial(t *testing.T) {
	tests := []struct {
		dtype sdk.DType
		bits  []uint32
		want  census
	}{
		{sdk.FP16, []uint32{0xFFFF, 0x7E00, 0x7C01, 0x7C00, 0xFC00, 0x8000, 0x0000, 0x3C00}, census{unwritten: 1, nan: 2, inf: 2, zero: 2}},
		{sdk.BF16, []uint32{0xFFFF, 0x7FC0, 0xFF80, 0x0000, 0x3F80}, census{unwritten: 1, nan: 1, inf: 1, zero: 1}},
		{sdk.FP32, []uint32{0xFFFFFFFF, 0x7FC00000, 0x7F800000, 0x80000000, 0x3F800000, 0xFFFF0000}, census{unwritten: 1, nan: 2, inf: 1, zero: 1}},
	}
	for _, tc := range tests {
		l := layoutOf(tc.dtype)
		data := make([]byte, len(tc.bits)*l.size)
		for i, b := range tc.bits {
			for j := range l.size {
				data[i*l.size+j] = byte(b >> (8 * j))
			}
		}
		if got := countSpecial(data, tc.dtype); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.dtype, got, tc.want)
		}
	}
}

// TestWrongRowsNearTheEndFail: a kernel that gets the last query block
// wrong (a partial tile at an odd length, a masking slip in the last rows)
// fails every check, not only those whose draw happens to land there.
func TestWrongRowsNearTheEndFail(t *testing.T) {
	tc := testCase(1, 6, 6, 300, 300, 32, true, sdk.FP16, op.Normal)
	sampled := op.CheckSettings{FullCheckMaxPairs: 1 << 12, SampledRows: 12}
	s, d := tc.Shape, tc.Shape.HeadDim
	for _, wrongRow := range []int{s.SeqQ - 2, s.SeqQ - 30, (s.SeqQ - 1) / reference.EdgeBlock * reference.EdgeBlock} {
		out := correctOutput(tc)
		for head := range s.Batch * s.Heads {
			flat := head*s.SeqQ + wrongRow
			for i := range d {
				out[flat*d+i] = out[(flat-1)*d+i] // the row above's values: plausible, wrong
			}
		}
		output := inputs.Encode(sdk.FP16, out)
		for try := range 10 {
			if r := Check(tc, output, sampled, tolerances[sdk.FP16]); r.Verdict != Fail {
				t.Fatalf("row %d wrong in every head, try %d: passed: %+v", wrongRow, try, r)
			}
		}
	}
}
