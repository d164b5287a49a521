// Package rmsnorm is RMS normalisation as an op: y = x / sqrt(mean(x²) +
// eps) · weight over each row of x. It is the second op of FlashCore
// bench, small on purpose: it shows, in one package, everything an op
// declares (docs/adding-an-op.md). Its work is bandwidth-bound, so its
// `% peak` is of the memory roof.
package rmsnorm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Name is the op's name in suites, results and the wire.
const Name = "rmsnorm"

// Eps is the epsilon of the contract, added to the mean square before the
// square root, as in torch.nn.functional.rms_norm(..., eps=1e-6).
const Eps = 1e-6

// Spec is rmsnorm as data.
var Spec = op.Spec{
	Name:    Name,
	Summary: "RMS normalisation of each row: y = x / sqrt(mean(x²) + 1e-6) · weight",
	Axes: []op.Axis{
		{Name: "rows", Kind: op.Int, Doc: "rows of x, normalised independently (tokens)"},
		{Name: "cols", Kind: op.Int, Doc: "elements of a row (the hidden size)"},
		{Name: "dtype", Kind: op.Elem, Default: string(sdk.FP16), Doc: "element type of x, weight and y; accumulate in fp32 or wider"},
	},
	Inputs: []op.Tensor{
		{Name: "x", DType: "dtype", Dims: []string{"rows", "cols"}},
		{Name: "weight", DType: "dtype", Dims: []string{"cols"}},
	},
	Outputs: []op.Tensor{
		{Name: "y", DType: "dtype", Dims: []string{"rows", "cols"}},
	},
	Roof:     op.BandwidthRoof,
	Contract: "rmsnorm(x, weight, *, eps) -> y",
}

// Op is rmsnorm's behaviour.
type Op struct{}

// Spec is the op as data.
func (Op) Spec() op.Spec { return Spec }

// Validate has nothing to add to the axes' own checks.
func (Op) Validate(op.Params) (string, string) { return "", "" }

// CaseID is rmsnorm-r{rows}-c{cols}-{dtype}[-{distribution}].
func (Op) CaseID(p op.Params, dist op.Distribution) string {
	id := fmt.Sprintf("rmsnorm-r%d-c%d-%s", p.Int("rows"), p.Int("cols"), p.DType("dtype"))
	if dist != op.Normal && dist != "" {
		id += "-" + string(dist)
	}
	return strings.ToLower(id)
}

// Label is "rmsnorm 4096x8192 fp16".
func (Op) Label(p op.Params) string {
	return fmt.Sprintf("rmsnorm %dx%d %s", p.Int("rows"), p.Int("cols"), p.DType("dtype"))
}

// Generate draws x and weight from the case's distribution.
func (Op) Generate(seed uint64, c op.Case) *op.Inputs {
	rows, cols, dtype := c.Params.Int("rows"), c.Params.Int("cols"), c.DType()
	return op.NewInputs(
		op.TensorData{Name: "x", DType: dtype, Dims: []int{rows, cols},
			Data: inputs.Draw(seed, c.ID, 0, c.Distribution, dtype, rows*cols)},
		op.TensorData{Name: "weight", DType: dtype, Dims: []int{cols},
			Data: inputs.Draw(seed, c.ID, 1, c.Distribution, dtype, cols)},
	)
}

// Check compares y with the fp64 reference on every row, or on rows
// sampled afresh when the case is large.
func (Op) Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report {
	rows, cols, dtype := c.Params.Int("rows"), c.Params.Int("cols"), c.DType()
	var seed uint64
	if check.RowsSampled(rows, int64(cols), settings) {
		seed = check.FreshSeed()
	}
	checked := check.SampleRows(rows, int64(cols), settings, seed)
	m := check.Matrix{DType: dtype, Rows: rows, Cols: cols, Checked: checked, RowSeed: seed,
		Want:  Reference(in.Tensor("x").Data, in.Tensor("weight").Data, dtype, cols, checked),
		Where: func(row, col int) string { return fmt.Sprintf("[row %d col %d]", row, col) }}
	return []check.Report{check.CheckMatrix(outputs[0], m, tols[0])}
}

// Reference is y of the given rows in fp64, from the inputs as stored.
func Reference(x, weight []byte, dtype sdk.DType, cols int, rows []int) [][]float64 {
	w := inputs.Decode(dtype, weight)
	rowBytes := cols * dtype.Size()
	out := make([][]float64, len(rows))
	xs := make([]float64, cols)
	for i, row := range rows {
		inputs.DecodeInto(xs, dtype, x[row*rowBytes:(row+1)*rowBytes])
		var sumSq float64
		for _, v := range xs {
			sumSq += v * v
		}
		inv := 1 / math.Sqrt(sumSq/float64(cols)+Eps)
		y := make([]float64, cols)
		for j, v := range xs {
			y[j] = v * inv * w[j]
		}
		out[i] = y
	}
	return out
}

// Work: 4 operations an element (square, add, scale, weight), and reading
// x and weight and writing y once each.
func (Op) Work(c op.Case, _ *op.Inputs) op.Work {
	rows, cols := float64(c.Params.Int("rows")), float64(c.Params.Int("cols"))
	size := float64(c.DType().Size())
	return op.Work{FLOPs: 4 * rows * cols, Bytes: (2*rows*cols + cols) * size}
}

// Examples are the cases the conformance kit runs on every backend of
// rmsnorm, most telling first: a single row (a decode step), an odd row
// count and a width no vector of 8 divides, and a prefill-sized block, in
// each dtype.
func (Op) Examples() []op.Params {
	var out []op.Params
	for _, size := range [][2]int{{1, 4096}, {37, 1003}, {256, 8192}} {
		for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
			out = append(out, op.Params{"rows": strconv.Itoa(size[0]), "cols": strconv.Itoa(size[1]), "dtype": string(dtype)})
		}
	}
	return out
}

// Unsupported checks the capabilities that apply to every op: the element
// type and the size of x.
func (Op) Unsupported(caps sdk.Capabilities, p op.Params) string {
	if reason := caps.UnsupportedDType(p.DType("dtype")); reason != "" {
		return reason
	}
	return caps.OverMaxElements(p.Int("rows") * p.Int("cols"))
}
