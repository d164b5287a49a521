package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

func TestCheckEveryRow(t *testing.T) {
	const rows, cols = 1000, 8
	values := make([]float32, rows*cols)
	for i := range values {
		values[i] = float32(i%17)/17 - 0.5
	}
	encode := func(edit func([]float64)) []byte {
		out := make([]float64, len(values))
		for i, v := range values {
			out[i] = float64(v)
		}
		edit(out)
		return inputs.Encode(sdk.FP32, out)
	}
	tol := op.Tolerance{Atol: 1e-5, Rtol: 1e-5, RelL2: 1e-5}
	where := func(row, col int) string { return fmt.Sprintf("[row %d col %d]", row, col) }
	tests := []struct {
		name        string
		calibration float64
		edit        func([]float64)
		want        string // "" for PASS
	}{
		{"equal", 0, func([]float64) {}, ""},
		{"one element off, in a row of the middle", 0, func(o []float64) { o[613*cols+5] += 0.25 }, "1 of 8000 elements exceed atol + rtol·|ref| (+0, twice its error against fp64); worst at [row 613 col 5]"},
		{"the worst of several is named", 0, func(o []float64) { o[10] += 0.1; o[7990] += 0.3 }, "2 of 8000 elements exceed"},
		{"within the calibration's slack", 2e-5, func(o []float64) { o[42] += 4e-5 }, ""},
		{"beyond the calibration's slack", 2e-5, func(o []float64) { o[42] += 8e-5 }, "worst at [row 5 col 2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := &FullReference{Values: values, Calibration: tt.calibration, Name: "fp32 (test)"}
			r := CheckEveryRow(encode(tt.edit), sdk.FP32, cols, ref, tol, where)
			if (tt.want == "") != (r.Verdict == Pass) || !strings.Contains(r.Reason, tt.want) {
				t.Errorf("%s %q, want %q", r.Verdict, r.Reason, tt.want)
			}
			if r.EveryRow == nil || r.EveryRow.Rows != rows {
				t.Errorf("every row %+v", r.EveryRow)
			}
		})
	}
}
