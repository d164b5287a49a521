// Package ops is the list of operations FlashCore bench measures, and the
// interface each implements. Start with Op; Lookup finds one by name.
//
// An op is data first (op.Spec: axes, tensors, roof) and behaviour second:
// it names its cases, generates their inputs from the suite's seed,
// checks outputs against its fp64 reference, says how much work a call
// does, and says whether a backend's declared capabilities cover a case.
// The suite decoder, the runner, the results and the reports reach an op
// only through this interface, so adding one touches this package's list,
// the op's own package and the backends that implement it
// (docs/adding-an-op.md).
package ops

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/decode"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/ops/varlen"
	"github.com/flashcore/bench/sdk"
)

// Op is one operation.
type Op interface {
	// Spec is the op as data.
	Spec() op.Spec
	// Validate checks what the axes' own kinds cannot: relations between
	// axes and limits of size. It returns the axis key at fault and the
	// problem, or "" and "". The suite decoder calls it on every
	// combination of an entry's values, also when the entry has other
	// problems: an axis none of whose values passed its own checks is then
	// absent from p, and Validate must take an absent axis as no
	// constraint (Params.Int reads it as 0).
	Validate(p op.Params) (key, problem string)
	// CaseID names a case, stably: it keys the input generator.
	CaseID(p op.Params, dist op.Distribution) string
	// Label is the case as tables show it, such as "B1 H8 S512 D64 fp16".
	Label(p op.Params) string
	// Generate draws a case's inputs from the seed, in Spec().InputsOf(c.Params) order.
	Generate(seed uint64, c op.Case) *op.Inputs
	// Check compares a backend's outputs, in Spec().OutputsOf(c.Params) order, with
	// the reference and the op's invariants: one report per output, each
	// held to its own tolerance (tols, in the same order; see
	// op.Spec.Tolerances). Rows it samples are drawn afresh, after the
	// outputs exist.
	Check(c op.Case, in *op.Inputs, outputs [][]byte, settings op.CheckSettings, tols []op.Tolerance) []check.Report
	// Work is what one call does. in may be nil (planning): then the op
	// estimates it from the params alone.
	Work(c op.Case, in *op.Inputs) op.Work
	// Unsupported says why a variant with these capabilities (its
	// capabilities for this op, sdk.Variant.CapabilitiesOf) cannot run
	// the case, or "".
	Unsupported(caps sdk.Capabilities, p op.Params) string
}

// referenceWarmer is what an op offers whose check compares rows it knows
// before the output exists: their reference can be computed ahead.
type referenceWarmer interface {
	warmReference(c op.Case, in *op.Inputs, settings op.CheckSettings, workers int) bool
}

// WarmReference computes ahead, on at most workers goroutines, the
// reference that Check will compare outputs of c on in with, and keeps it
// with in, where the op knows which rows that is before the output
// exists: every row of a case whose check samples none. It reports
// whether it did; Check computes whatever was not warmed, as ever.
func WarmReference(c op.Case, in *op.Inputs, settings op.CheckSettings, workers int) bool {
	w, ok := Of(c).(referenceWarmer)
	return ok && w.warmReference(c, in, settings, workers)
}

// deriver is what an op with derived axes (op.Axis.Derived) offers
// beyond Op: it sets them in p from the other axes.
type deriver interface {
	Derive(p op.Params)
}

// Complete sets the derived axes of a case's params, in place, and
// removes each axis marked OmitDefault that takes its default, and
// returns p: the suite decoder calls it on every case it builds, so that
// every axis has an entry (but those) and tensor dims may name derived
// axes.
func Complete(o Op, p op.Params) op.Params {
	if d, ok := o.(deriver); ok {
		d.Derive(p)
	}
	for _, a := range o.Spec().Axes {
		if v, set := p[a.Name]; a.OmitDefault && set && v == a.Default {
			delete(p, a.Name)
		}
	}
	return p
}

// Default is the op of a suite entry that names none, and of a variant
// that lists none: attention, the only op before ops existed.
const Default = attention.Name

var registry = map[string]Op{}

func register(o Op) {
	name := o.Spec().Name
	if _, taken := registry[name]; taken {
		panic("ops: " + name + " registered twice")
	}
	registry[name] = o
}

func init() {
	register(attentionOp{})
	register(rmsnorm.Op{})
	register(decode.Op{})
	register(varlen.Op{})
}

// Lookup returns the op of that name.
func Lookup(name string) (Op, error) {
	if o, ok := registry[name]; ok {
		return o, nil
	}
	return nil, fmt.Errorf("unknown op %q: want %s", name, joinNames(Names()))
}

// Of returns the op of a case. Cases are only made for known ops, so an
// unknown one is a programming error.
func Of(c op.Case) Op {
	o, err := Lookup(c.Op)
	if err != nil {
		panic(fmt.Sprintf("case %s: %v", c.ID, err))
	}
	return o
}

// Names lists the ops, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Specs lists every op as data, sorted by name.
func Specs() []op.Spec {
	var out []op.Spec
	for _, name := range Names() {
		out = append(out, registry[name].Spec())
	}
	return out
}

func joinNames(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Label is the table label of a case: its op's, or the op name and
// params when the op is unknown here (a results file from a newer build).
func Label(opName string, p op.Params) string {
	if o, ok := registry[opName]; ok {
		return o.Label(p)
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := opName
	for _, k := range keys {
		out += fmt.Sprintf(" %s=%s", k, p[k])
	}
	return out
}

// Supports reports whether a variant offers the op. A variant that lists
// no ops offers attention, as every variant did before ops existed.
func Supports(v sdk.Variant, opName string) bool {
	if len(v.Ops) == 0 {
		return opName == Default
	}
	return slices.Contains(v.Ops, opName)
}

// Unsupported is the one capability check: why variant v cannot run case
// c, or "". It holds the case to the variant's capabilities for the case's
// op (sdk.Variant.CapabilitiesOf). The host calls it before every row;
// the Python bridge calls it again for requests that did not come through
// the host.
func Unsupported(v sdk.Variant, c op.Case) string {
	if !Supports(v, c.Op) {
		return fmt.Sprintf("op %s not supported", c.Op)
	}
	return Of(c).Unsupported(v.CapabilitiesOf(c.Op), c.Params)
}

// attentionView is what the attention op offers beyond Op: the SDK's
// attention Shape and Tensors, which version 1 of the protocol and of
// the results file carried, and which attention plugins still read.
type attentionView interface {
	shape(c op.Case) sdk.Shape
	files(inputs, outputs []sdk.TensorFile) sdk.Tensors
}

// PrepareRequest is the request that asks a backend to load case c from
// the files named. For attention it also fills Shape and Files.
func PrepareRequest(c op.Case, variant string, tunables map[string]string, inputs, outputs []sdk.TensorFile, inputSHA256 string) sdk.PrepareRequest {
	req := sdk.PrepareRequest{CaseID: c.ID, Variant: variant, Op: c.Op, Params: c.Params.Clone(),
		Inputs: inputs, Outputs: outputs, Tunables: tunables, InputSHA256: inputSHA256}
	if view, ok := Of(c).(attentionView); ok {
		req.Shape = view.shape(c)
		req.Files = view.files(inputs, outputs)
	}
	return req
}

// ShapeOf is the attention Shape of a case, which results files of
// schema 4 and earlier key cases by; ok is false for other ops.
func ShapeOf(c op.Case) (s sdk.Shape, ok bool) {
	if view, ok := Of(c).(attentionView); ok {
		return view.shape(c), true
	}
	return sdk.Shape{}, false
}

// examples is what an op offers beyond Op for the conformance kit: a few
// cases, most telling first, that every backend of the op must get right.
type examples interface {
	Examples() []op.Params
}

// Examples are the cases of an op that the conformance kit runs on every
// variant that lists it; none for attention, whose kit cases are drawn
// from each variant's capabilities (package conformance).
func Examples(name string) []op.Case {
	o, err := Lookup(name)
	if err != nil {
		return nil
	}
	ex, ok := o.(examples)
	if !ok {
		return nil
	}
	var out []op.Case
	for _, p := range ex.Examples() {
		p = Complete(o, p)
		out = append(out, op.Case{ID: o.CaseID(p, op.Normal), Op: name, Params: p, Distribution: op.Normal})
	}
	return out
}

// InputFiles names the files of a case's inputs in dir, as the host
// writes them: each tensor's name, after prefix, with .bin.
func InputFiles(in *op.Inputs, dir, prefix string) []sdk.TensorFile {
	out := make([]sdk.TensorFile, len(in.Tensors))
	for i, t := range in.Tensors {
		out[i] = sdk.TensorFile{Name: t.Name, Path: filepath.Join(dir, prefix+t.Name+".bin"), DType: t.DType, Dims: t.Dims}
	}
	return out
}

// OutputFiles names a case's output files in dir, as the host does:
// base.bin for an op's only output, base-{name}.bin for each of several.
func OutputFiles(c op.Case, dir, base string) []sdk.TensorFile {
	outputs := Of(c).Spec().OutputsOf(c.Params)
	out := make([]sdk.TensorFile, len(outputs))
	for i, t := range outputs {
		name := base + ".bin"
		if len(outputs) > 1 {
			name = base + "-" + t.Name + ".bin"
		}
		out[i] = sdk.TensorFile{Name: t.Name, Path: filepath.Join(dir, name), DType: t.ElemType(c.Params), Dims: t.Shape(c.Params)}
	}
	return out
}
