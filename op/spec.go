package op

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flashcore/bench/sdk"
)

// Kind is the type of an axis's values.
type Kind string

const (
	// Int axes take positive integers.
	Int Kind = "int"
	// Bool axes take true or false.
	Bool Kind = "bool"
	// Elem axes take an element type: fp16, bf16 or fp32.
	Elem Kind = "dtype"
	// Choice axes take one of the axis's Values, a string.
	Choice Kind = "choice"
	// Window axes take a count of positions that may be 0, or -1 for no
	// limit: a sliding window's reach.
	Window Kind = "window"
	// Float axes take a number at or above 0, as an integer or a float;
	// the canonical text is Go's shortest ("30", "0.5").
	Float Kind = "float"
)

// Axis is one parameter of an op, written as a key of a suite's
// [[sweeps]] (a list of values) or [[cases]] (one value) entry.
type Axis struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Default is the value an entry that leaves the key out gets. An axis
	// with neither Default nor SameAs is required.
	Default string `json:"default,omitempty"`
	// SameAs names the axis whose value this one takes when left out, as
	// kv_heads takes heads.
	SameAs string `json:"same_as,omitempty"`
	// Doc says what the axis means, for `flashcore list --ops`.
	Doc string `json:"doc"`
	// Values are the values a Choice axis takes.
	Values []string `json:"values,omitempty"`
	// Derived, when set, says how the op computes the axis from the
	// others, such as a paged cache's page count: a suite may not set it,
	// and the op fills it in every case (ops.Complete). A tensor's dims
	// may name it like any other axis.
	Derived string `json:"derived,omitempty"`
	// OmitDefault leaves the axis out of a case's params when it takes
	// its Default (ops.Complete): an axis added to an op after its cases
	// were first recorded, so that those cases keep their params, and
	// with them their IDs, inputs, results files and table columns. An
	// absent axis reads as its default.
	OmitDefault bool `json:"omit_default,omitempty"`
}

// Required reports whether an entry must set the axis.
func (a Axis) Required() bool { return a.Default == "" && a.SameAs == "" && a.Derived == "" }

// Tensor is one named tensor of an op. Its shape is written in axis names
// (or literal sizes), outermost first, and the tensor is dense and
// row-major in that order.
type Tensor struct {
	Name string `json:"name"`
	// DType is the name of the axis that gives the element type (an Elem
	// axis, usually "dtype"), or a fixed type such as "int32".
	DType string   `json:"dtype"`
	Dims  []string `json:"dims"`
	// ToleranceFactor, of an output, is how many times its dtype's
	// tolerance the output is held to: above 1 for an output whose error
	// grows with the problem, such as a backward's dQ. 0 means 1. The
	// dtype's tolerance is DefaultTolerances' entry, or the suite's
	// [tolerance.<dtype>] (Spec.Tolerances).
	ToleranceFactor float64 `json:"tolerance_factor,omitempty"`
	// When, if set, makes the tensor part of only the cases whose axes
	// have one of the values listed (axis name to values), as attention's
	// dO exists only in its backward modes. Spec.InputsOf and OutputsOf
	// are a case's tensors.
	When map[string][]string `json:"when,omitempty"`
	// MayDiffer, of an output, says that kernels commonly compute it with
	// atomic additions whose order the hardware picks (a backward's dQ, dK
	// and dV), so that two runs on the same inputs may differ in their last
	// bits. A repeated checked run whose differences lie in such outputs
	// alone is checked against the reference like the first run, and the
	// difference is recorded as a finding rather than failing the row
	// (docs/correctness.md); `flashcore gate` still requires bit-identical
	// runs.
	MayDiffer bool `json:"may_differ,omitempty"`
}

// In reports whether the tensor is part of a case with params p.
func (t Tensor) In(p Params) bool {
	for axis, values := range t.When {
		if !slices.Contains(values, p[axis]) {
			return false
		}
	}
	return true
}

// Roof is the limit an op's throughput is held against in `% peak`.
type Roof string

const (
	// ComputeRoof: the op is measured in TFLOP/s against the device's
	// tensor peak.
	ComputeRoof Roof = "compute"
	// BandwidthRoof: the op is measured in GB/s against the device's
	// memory bandwidth.
	BandwidthRoof Roof = "bandwidth"
)

// Spec is an op as data: what `flashcore list --ops` prints, what the
// suite decoder checks entries against, and what the host tells a plugin
// about the tensors of a case.
type Spec struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Axes    []Axis   `json:"axes"`
	Inputs  []Tensor `json:"inputs"`
	Outputs []Tensor `json:"outputs"`
	Roof    Roof     `json:"roof"`
	// Contract is the function a `py:` file defines for this op, as its
	// signature reads in Python.
	Contract string `json:"contract"`
	// Chart says how charts draw the op's cases; nil for an op that is
	// not charted (its cases are in the tables and CSV alone).
	Chart *Chart `json:"chart,omitempty"`
}

// Chart is how the charts draw an op's cases: one panel per facet (the op
// groups its cases into facets, ops.FacetOf), with X along one axis.
type Chart struct {
	// X is the Int axis along the x axis, such as "seq_k".
	X string `json:"x"`
	// XLabel names the x axis on the chart.
	XLabel string `json:"x_label"`
}

// Facet is one panel of an op's charts: the cases that share it differ
// only along the chart's X (and what scales with it).
type Facet struct {
	// Name is the facet in chart file names, such as "d128-fp16-causal".
	Name string
	// Title is the facet in chart titles, such as "D128 fp16, causal".
	Title string
	// Order sorts the facets of a run: facets are drawn in the order of
	// their Order strings.
	Order string
}

// InputsOf are the inputs of a case with params p, in order.
func (s Spec) InputsOf(p Params) []Tensor { return present(s.Inputs, p) }

// OutputsOf are the outputs of a case with params p, in order.
func (s Spec) OutputsOf(p Params) []Tensor { return present(s.Outputs, p) }

func present(tensors []Tensor, p Params) []Tensor {
	out := make([]Tensor, 0, len(tensors))
	for _, t := range tensors {
		if t.In(p) {
			out = append(out, t)
		}
	}
	return out
}

// Output returns the output tensor of that name (of any case).
func (s Spec) Output(name string) (Tensor, bool) {
	for _, t := range s.Outputs {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Tolerances are the tolerances of a case's outputs under params p, in
// OutputsOf(p) order. Each output is held to table's entry for its element
// type, times its ToleranceFactor, unless overrides set that output in
// that type exactly (a suite's [tolerance.<op>.<output>.<dtype>]).
func (s Spec) Tolerances(p Params, table map[sdk.DType]Tolerance, overrides map[OutputKey]Tolerance) []Tolerance {
	outputs := s.OutputsOf(p)
	out := make([]Tolerance, len(outputs))
	for i, t := range outputs {
		dtype := t.ElemType(p)
		if tol, ok := overrides[OutputKey{Op: s.Name, Output: t.Name, DType: dtype}]; ok {
			out[i] = tol
			continue
		}
		out[i] = table[dtype].Times(t.ToleranceFactor)
	}
	return out
}

// Axis returns the axis of that name.
func (s Spec) Axis(name string) (Axis, bool) {
	for _, a := range s.Axes {
		if a.Name == name {
			return a, true
		}
	}
	return Axis{}, false
}

// Params are the values of a case's axes, each in its canonical text:
// "64", "true", "fp16". Every axis of the op has an entry, but an axis
// marked OmitDefault that takes its default.
type Params map[string]string

// Int is the value of an Int axis; 0 when absent or not an integer.
func (p Params) Int(name string) int {
	v, _ := strconv.Atoi(p[name])
	return v
}

// Float is the value of a Float axis; 0 when absent or not a number.
func (p Params) Float(name string) float64 {
	v, _ := strconv.ParseFloat(p[name], 64)
	return v
}

// Bool is the value of a Bool axis.
func (p Params) Bool(name string) bool { return p[name] == "true" }

// DType is the value of an Elem axis.
func (p Params) DType(name string) sdk.DType { return sdk.DType(p[name]) }

// Clone returns a copy that can be changed without changing p.
func (p Params) Clone() Params {
	out := make(Params, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// ParseValue checks one value of an axis and returns its canonical text,
// or a problem in the words a suite error uses.
func (a Axis) ParseValue(v any) (string, string) {
	switch a.Kind {
	case Int:
		n, ok := v.(int64)
		if !ok {
			return "", fmt.Sprintf("want an integer, got %s", typeName(v))
		}
		if n <= 0 {
			return "", fmt.Sprintf("must be positive, got %d", n)
		}
		return strconv.FormatInt(n, 10), ""
	case Window:
		n, ok := v.(int64)
		if !ok {
			return "", fmt.Sprintf("want an integer, got %s", typeName(v))
		}
		if n < -1 {
			return "", fmt.Sprintf("must be 0 or more, or -1 for no limit, got %d", n)
		}
		return strconv.FormatInt(n, 10), ""
	case Float:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case float64:
			f = x
		default:
			return "", fmt.Sprintf("want a number, got %s", typeName(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return "", fmt.Sprintf("must be a finite number at or above 0, got %v", f)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), ""
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Sprintf("want a boolean, got %s", typeName(v))
		}
		return strconv.FormatBool(b), ""
	case Choice:
		s, ok := v.(string)
		if !ok {
			return "", fmt.Sprintf("want a string, got %s", typeName(v))
		}
		if !slices.Contains(a.Values, s) {
			return "", fmt.Sprintf("unknown value %q: want %s", s, quotedList(a.Values))
		}
		return s, ""
	case Elem:
		s, ok := v.(string)
		if !ok {
			return "", fmt.Sprintf("want a string, got %s", typeName(v))
		}
		if !sdk.DType(s).Valid() {
			return "", fmt.Sprintf("unknown dtype %q: want fp16, bf16 or fp32", s)
		}
		return s, ""
	}
	return "", fmt.Sprintf("axis kind %q is unknown", a.Kind)
}

// quotedList is "a", "b" or "c".
func quotedList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func typeName(v any) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// Dims resolves the shape of tensor t under params p: each dim is an axis
// value or a literal size.
func (t Tensor) Shape(p Params) []int {
	out := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		if n, err := strconv.Atoi(d); err == nil {
			out[i] = n
			continue
		}
		out[i] = p.Int(d)
	}
	return out
}

// ElemType is the element type of tensor t under params p.
func (t Tensor) ElemType(p Params) sdk.DType {
	if v, ok := p[t.DType]; ok {
		return sdk.DType(v)
	}
	return sdk.DType(t.DType)
}

// Elements is the number of elements of tensor t under params p.
func (t Tensor) Elements(p Params) int {
	n := 1
	for _, d := range t.Shape(p) {
		n *= d
	}
	return n
}

// Bytes is the size of tensor t's file under params p.
func (t Tensor) Bytes(p Params) int64 {
	return int64(t.Elements(p)) * int64(t.ElemType(p).Size())
}

// String writes the tensor as the docs do: x[rows, cols] fp16.
func (t Tensor) String() string {
	return fmt.Sprintf("%s[%s] %s", t.Name, strings.Join(t.Dims, ", "), t.DType)
}
