package rmsnorm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func testCase(rows, cols int, dtype sdk.DType) op.Case {
	p := op.Params{"rows": strconv.Itoa(rows), "cols": strconv.Itoa(cols), "dtype": string(dtype)}
	return op.Case{ID: Op{}.CaseID(p, op.Normal), Op: Name, Params: p, Distribution: op.Normal}
}

// honest is y computed in fp64 and rounded to the dtype, as a correct
// kernel's output is at best.
func honest(c op.Case, in *op.Inputs) []byte {
	rows, cols := c.Params.Int("rows"), c.Params.Int("cols")
	all := make([]int, rows)
	for i := range all {
		all[i] = i
	}
	want := Reference(in.Tensor("x").Data, in.Tensor("weight").Data, c.DType(), cols, all)
	flat := make([]float64, 0, rows*cols)
	for _, row := range want {
		flat = append(flat, row...)
	}
	return inputs.Encode(c.DType(), flat)
}

func TestCheckPassesTheHonestOutputAndFailsWrongOnes(t *testing.T) {
	tol := op.DefaultTolerances()
	settings := op.DefaultCheckSettings()
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		c := testCase(37, 96, dtype)
		in := Op{}.Generate(7, c)
		good := honest(c, in)
		size := dtype.Size()
		wrong := map[string]func() []byte{
			"all zeros": func() []byte { return make([]byte, len(good)) },
			"unwritten": func() []byte {
				out := append([]byte(nil), good...)
				for i := range out[:size*5] {
					out[i] = sdk.PoisonByte
				}
				return out
			},
			"without the weight": func() []byte {
				rows, cols := c.Params.Int("rows"), c.Params.Int("cols")
				ones := inputs.Encode(dtype, repeat(1, cols))
				all := make([]int, rows)
				for i := range all {
					all[i] = i
				}
				ref := Reference(in.Tensor("x").Data, ones, dtype, cols, all)
				var flat []float64
				for _, r := range ref {
					flat = append(flat, r...)
				}
				return inputs.Encode(dtype, flat)
			},
			"rows swapped": func() []byte {
				out := append([]byte(nil), good...)
				rowBytes := 96 * size
				copy(out[:rowBytes], good[rowBytes:2*rowBytes])
				copy(out[rowBytes:2*rowBytes], good[:rowBytes])
				return out
			},
			"scaled 2%": func() []byte {
				v := inputs.Decode(dtype, good)
				for i := range v {
					v[i] *= 1.02
				}
				return inputs.Encode(dtype, v)
			},
			"short": func() []byte { return good[:len(good)-size] },
		}
		reports := Op{}.Check(c, in, [][]byte{good}, settings, []op.Tolerance{tol[dtype]})
		if len(reports) != 1 || reports[0].Verdict != check.Pass {
			t.Fatalf("%s: the honest output: %+v", dtype, reports)
		}
		for name, output := range wrong {
			r := Op{}.Check(c, in, [][]byte{output()}, settings, []op.Tolerance{tol[dtype]})[0]
			if r.Verdict != check.Fail {
				t.Errorf("%s %s: verdict %s (rel L2 %.3g), want FAIL", dtype, name, r.Verdict, r.RelL2Err)
			}
		}
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// A large case checks a sample of rows drawn afresh: the same wrong row
// is found whichever rows are drawn, as long as the sample holds it; the
// first and last rows are always drawn.
func TestLargeCasesSampleRowsIncludingTheEdges(t *testing.T) {
	settings := op.CheckSettings{FullCheckMaxPairs: 1000, SampledRows: 16}
	c := testCase(500, 64, sdk.FP32)
	in := Op{}.Generate(3, c)
	out := honest(c, in)
	last := inputs.Decode(sdk.FP32, out[(499*64)*4:])
	last[5] += 1
	copy(out[(499*64)*4:], inputs.Encode(sdk.FP32, last))
	r := Op{}.Check(c, in, [][]byte{out}, settings, []op.Tolerance{op.DefaultTolerances()[sdk.FP32]})[0]
	if !r.Sampled || r.RowsChecked != 16 || r.RowSeed == 0 {
		t.Errorf("sampled %v rows %d seed %d, want 16 sampled rows and their seed", r.Sampled, r.RowsChecked, r.RowSeed)
	}
	if r.Verdict != check.Fail || r.Violations != 1 {
		t.Errorf("verdict %s with %d violations (%s), want a FAIL for the one wrong element", r.Verdict, r.Violations, r.Reason)
	}
}

func TestWorkAndID(t *testing.T) {
	c := testCase(4096, 8192, sdk.BF16)
	if c.ID != "rmsnorm-r4096-c8192-bf16" {
		t.Errorf("ID %q", c.ID)
	}
	w := Op{}.Work(c, nil)
	if w.FLOPs != 4*4096*8192 || w.Bytes != (2*4096*8192+8192)*2 {
		t.Errorf("work %+v", w)
	}
	if got := (Op{}).Label(c.Params); got != "rmsnorm 4096x8192 bf16" {
		t.Errorf("label %q", got)
	}
}

func TestUnsupported(t *testing.T) {
	c := testCase(4, 8, sdk.FP32)
	caps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}}
	if got := (Op{}).Unsupported(caps, c.Params); got != "dtype fp32 not supported" {
		t.Errorf("got %q", got)
	}
	caps = sdk.Capabilities{DTypes: []sdk.DType{sdk.FP32}, MaxElements: 16}
	if got := (Op{}).Unsupported(caps, c.Params); !strings.Contains(got, "32 elements per tensor") {
		t.Errorf("got %q", got)
	}
}
