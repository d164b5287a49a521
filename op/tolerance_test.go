package op

import (
	"reflect"
	"testing"

	"github.com/flashcore/bench/sdk"
)

// backward is an op of three outputs, as a backward pass would declare
// them: dq looser than the table, dk at the table, and a fixed-type
// output the table has no entry for.
var backward = Spec{
	Name: "backward",
	Axes: []Axis{{Name: "dtype", Kind: Elem, Default: "fp16"}},
	Outputs: []Tensor{
		{Name: "dq", DType: "dtype", ToleranceFactor: 4},
		{Name: "dk", DType: "dtype"},
		{Name: "lse", DType: "fp32"},
	},
}

// TestSpecTolerances: each output gets the table's entry for its own
// element type, times its factor, unless the suite set that output.
func TestSpecTolerances(t *testing.T) {
	table := DefaultTolerances()
	fp16, fp32 := table[sdk.FP16], table[sdk.FP32]
	exact := Tolerance{Atol: 1, Rtol: 2, RelL2: 3}
	tests := []struct {
		name      string
		dtype     string
		overrides map[OutputKey]Tolerance
		want      []Tolerance
	}{
		{"table, factor and fixed type", "fp16", nil,
			[]Tolerance{{Atol: 4 * fp16.Atol, Rtol: 4 * fp16.Rtol, RelL2: 4 * fp16.RelL2}, fp16, fp32}},
		{"an override replaces table and factor", "fp16",
			map[OutputKey]Tolerance{{Op: "backward", Output: "dq", DType: sdk.FP16}: exact},
			[]Tolerance{exact, fp16, fp32}},
		{"an override of another dtype does not apply", "fp16",
			map[OutputKey]Tolerance{{Op: "backward", Output: "dk", DType: sdk.BF16}: exact},
			[]Tolerance{fp16.Times(4), fp16, fp32}},
		{"an override of another op does not apply", "fp16",
			map[OutputKey]Tolerance{{Op: "forward", Output: "dk", DType: sdk.FP16}: exact},
			[]Tolerance{fp16.Times(4), fp16, fp32}},
		{"a fixed-type output is overridden in its own type", "bf16",
			map[OutputKey]Tolerance{{Op: "backward", Output: "lse", DType: sdk.FP32}: exact},
			[]Tolerance{table[sdk.BF16].Times(4), table[sdk.BF16], exact}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := backward.Tolerances(Params{"dtype": tc.dtype}, table, tc.overrides)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Tolerances = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestToleranceTimesOneOrZeroIsIdentity(t *testing.T) {
	tol := DefaultTolerances()[sdk.BF16]
	if tol.Times(0) != tol || tol.Times(1) != tol {
		t.Errorf("Times(0) = %+v, Times(1) = %+v, want %+v", tol.Times(0), tol.Times(1), tol)
	}
}
