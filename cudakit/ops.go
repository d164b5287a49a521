package cudakit

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// OpCase is one case of an op other than attention, or of attention in a
// mode other than forward, as its plan sees it: the request's params and
// named tensor files. Prepare has checked the files against the op's
// declaration (names, order, dims and element types under Params), so a
// plan may take its sizes from either.
type OpCase struct {
	Op      string
	Params  op.Params
	Inputs  []sdk.TensorFile
	Outputs []sdk.TensorFile
}

// Tensor is the input or output of that name.
func (c OpCase) Tensor(name string) (sdk.TensorFile, bool) {
	for _, t := range slices.Concat(c.Inputs, c.Outputs) {
		if t.Name == name {
			return t, true
		}
	}
	return sdk.TensorFile{}, false
}

// OpPlan maps a case of an op other than attention, or of attention in a
// mode other than forward (Spec.ModePlans), inside the capabilities, and
// the variant's resolved tunables to the kernel function, launch geometry
// and parameters. Its buffers are the case's tensors, by
// their names in the op, and its own scratch. An error means the plugin
// cannot run this case; it is reported as unsupported, unless it wraps
// ErrInvalidPlan.
type OpPlan func(c OpCase, tunables map[string]string) (Launch, error)

// opName is the op a request names: attention when it names none, as
// every request did before ops existed.
func opName(req sdk.PrepareRequest) string { return cmp.Or(req.Op, attention.Name) }

// attentionMode is the mode of an attention request: its Shape's, else its
// params', else forward, as every request was before modes existed.
func attentionMode(req sdk.PrepareRequest) sdk.Mode {
	return cmp.Or(req.Shape.Mode, sdk.Mode(req.Params["mode"])).Or()
}

// attentionParams are the params of an attention request: its own, else
// its Shape's (a request that bypassed the host may carry only the shape).
// A request that carries both must carry the same case twice.
func attentionParams(req sdk.PrepareRequest) (op.Params, error) {
	if len(req.Params) == 0 {
		return attention.ParamsOf(req.Shape), nil
	}
	params := op.Params(req.Params)
	if req.Shape != (sdk.Shape{}) && attention.ShapeFrom(params) != req.Shape {
		return nil, fmt.Errorf("the request's shape %s and its params (%s) are not the same case", req.Shape, attention.ShapeFrom(params))
	}
	return params, nil
}

// CheckOps says what is wrong with the ops of s: an op Variant.Ops lists
// that the ops registry does not know or that has no plan, a plan for an
// op Variant.Ops does not list, a tunable's Ops naming such an op, or an
// attention mode declared without a plan or planned without being
// declared (checkModes). A plugin with such a Spec is unavailable rather
// than wrong at its first case.
func (s Spec) CheckOps() error {
	var problems []error
	for _, name := range s.Variant.Ops {
		if _, err := ops.Lookup(name); err != nil {
			problems = append(problems, fmt.Errorf("variant %s: %w", s.Variant.Name, err))
			continue
		}
		if name == attention.Name {
			if s.Plan == nil {
				problems = append(problems, fmt.Errorf("variant %s lists op %s but the spec has no Plan", s.Variant.Name, name))
			}
			continue
		}
		if s.Ops[name] == nil {
			problems = append(problems, fmt.Errorf("variant %s lists op %s but the spec has no plan for it in Ops", s.Variant.Name, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Ops)) {
		switch {
		case name == attention.Name:
			problems = append(problems, fmt.Errorf("op %s is planned by Spec.Plan, not by Spec.Ops", name))
		case !ops.Supports(s.Variant, name):
			problems = append(problems, fmt.Errorf("Spec.Ops plans op %s, which variant %s does not list in Ops", name, s.Variant.Name))
		}
	}
	for _, t := range s.Variant.Tunables {
		for _, name := range t.Ops {
			if !ops.Supports(s.Variant, name) {
				problems = append(problems, fmt.Errorf("tunable %s applies to op %s, which variant %s does not run", t.Name, name, s.Variant.Name))
			}
		}
	}
	return errors.Join(append(problems, s.checkModes()...)...)
}

// checkModes says what is wrong with the attention modes of s: a mode the
// capabilities list that is unknown, or that is not forward and has no
// plan in ModePlans; a plan in ModePlans for forward, for a mode the
// capabilities do not list, or of a variant that does not run attention.
func (s Spec) checkModes() []error {
	var problems []error
	runs := ops.Supports(s.Variant, attention.Name)
	caps := s.Variant.CapabilitiesOf(attention.Name)
	if runs {
		for _, m := range caps.Modes {
			switch {
			case !m.Valid() || m == "":
				problems = append(problems, fmt.Errorf("variant %s declares attention mode %q, which is unknown: want fwd, bwd or fwd+bwd", s.Variant.Name, m))
			case m != sdk.Forward && s.ModePlans[m] == nil:
				problems = append(problems, fmt.Errorf("variant %s declares attention mode %s but the spec has no plan for it in ModePlans", s.Variant.Name, m))
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(s.ModePlans)) {
		switch {
		case m.Or() == sdk.Forward:
			problems = append(problems, fmt.Errorf("attention mode %s is planned by Spec.Plan, not by Spec.ModePlans", sdk.Forward))
		case !runs:
			problems = append(problems, fmt.Errorf("Spec.ModePlans plans attention mode %s, but variant %s does not run attention", m, s.Variant.Name))
		case !slices.Contains(caps.Modes, m):
			problems = append(problems, fmt.Errorf("Spec.ModePlans plans attention mode %s, which variant %s does not declare in its capabilities' Modes", m, s.Variant.Name))
		}
	}
	return problems
}

// notServed says why the variant does not run the request's op, or "".
func (s Spec) notServed(req sdk.PrepareRequest) string {
	name := opName(req)
	if ops.Supports(s.Variant, name) {
		return ""
	}
	served := s.Variant.Ops
	if len(served) == 0 {
		served = []string{attention.Name}
	}
	return fmt.Sprintf("op %s not supported: %s runs %s", name, s.Name, strings.Join(served, ", "))
}

// tensor is one tensor of a case: what Prepare reads into a device buffer
// (an input) or what Fetch writes from one (an output).
type tensor struct {
	name  string // how Launch.Params names its buffer
	label string // how messages name it: Q for attention's q
	path  string // the file read at Prepare, or written by Fetch
	bytes int64
	shape string // what the size is for, in messages
}

// planned is a case as Prepare plans it before it touches the device.
type planned struct {
	launch  Launch
	inputs  []tensor // in the request's order, which the input hash follows
	outputs []tensor // in the request's order
	// attention is the case's shape when the op is attention: the
	// standard parameter list is made from it. nil for other ops.
	attention *sdk.Shape
}

// tensorNames are the buffer names of every tensor, inputs first.
func (p planned) tensorNames() []string {
	var names []string
	for _, t := range slices.Concat(p.inputs, p.outputs) {
		names = append(names, t.name)
	}
	return names
}

// tensorLabels names the tensors for a message: "Q, K, V, O".
func (p planned) tensorLabels() string {
	var labels []string
	for _, t := range slices.Concat(p.inputs, p.outputs) {
		labels = append(labels, t.label)
	}
	return strings.Join(labels, ", ")
}

// plan checks a request whose op the variant runs against the
// capabilities, asks the op's plan for the launch and validates it. A case
// the plugin cannot run comes back as a reason, before any input is read;
// an error is the plugin's fault (ErrInvalidPlan, an invalid launch) or
// the request's (tensor files that are not the op's). Attention forward
// is planned from the request's Shape and Files (planAttention); every
// other case, attention's other modes included, from its params and named
// tensors.
func (s Spec) plan(req sdk.PrepareRequest, tunables map[string]string) (p planned, reason string, err error) {
	name := opName(req)
	if name == attention.Name && attentionMode(req) == sdk.Forward {
		return s.planAttention(req, tunables)
	}
	o, err := ops.Lookup(name)
	if err != nil {
		return planned{}, err.Error(), nil
	}
	params := op.Params(req.Params)
	if name == attention.Name {
		if params, err = attentionParams(req); err != nil {
			return planned{}, "", err
		}
	}
	if reason := o.Unsupported(s.Variant.CapabilitiesOf(name), params); reason != "" {
		return planned{}, reason, nil
	}
	plan, reason, err := s.namedPlan(name, params)
	if plan == nil {
		return planned{}, reason, err
	}
	spec := o.Spec()
	if p.inputs, err = opTensors(spec.InputsOf(params), req.Inputs, params, "input"); err != nil {
		return planned{}, "", err
	}
	if p.outputs, err = opTensors(spec.OutputsOf(params), req.Outputs, params, "output"); err != nil {
		return planned{}, "", err
	}
	c := OpCase{Op: name, Params: params.Clone(), Inputs: slices.Clone(req.Inputs), Outputs: slices.Clone(req.Outputs)}
	if p.launch, err = plan(c, tunables); err != nil {
		if errors.Is(err, ErrInvalidPlan) {
			return planned{}, "", err
		}
		return planned{}, err.Error(), nil
	}
	if err := p.launch.ValidateWith(p.tensorNames()); err != nil {
		return planned{}, "", fmt.Errorf("the plan: %w", err)
	}
	return p, "", nil
}

// namedPlan is the plan of a case planned from its named tensors: the
// op's in Ops, or attention's mode's in ModePlans. Without one, a mode is
// a reason (the variant does not run it) and an op the variant lists an
// error (CheckOps makes such a spec unavailable first).
func (s Spec) namedPlan(name string, params op.Params) (OpPlan, string, error) {
	if name == attention.Name {
		m := attention.ShapeFrom(params).Mode.Or()
		if plan := s.ModePlans[m]; plan != nil {
			return plan, "", nil
		}
		return nil, fmt.Sprintf("mode %s not supported: %s has no plan for it", m, s.Name), nil
	}
	if plan := s.Ops[name]; plan != nil {
		return plan, "", nil
	}
	return nil, "", fmt.Errorf("%w: variant %s lists op %s but the spec has no plan for it", ErrInvalidPlan, s.Variant.Name, name)
}

// planAttention is plan for attention forward, which reads the request's
// Shape and Files as every attention plugin did before ops existed.
func (s Spec) planAttention(req sdk.PrepareRequest, tunables map[string]string) (planned, string, error) {
	if reason := s.Variant.Capabilities.Unsupported(req.Shape); reason != "" {
		return planned{}, reason, nil
	}
	if s.Plan == nil {
		return planned{}, "", fmt.Errorf("%w: variant %s runs attention but the spec has no Plan", ErrInvalidPlan, s.Variant.Name)
	}
	launch, err := s.Plan(req.Shape, tunables)
	if errors.Is(err, ErrInvalidPlan) {
		return planned{}, "", err
	}
	if err != nil {
		return planned{}, err.Error(), nil
	}
	if err := launch.Validate(); err != nil {
		return planned{}, "", fmt.Errorf("the plan: %w", err)
	}
	shape := req.Shape
	inputs, outputs := attentionTensors(req.Files, shape)
	return planned{launch: launch, inputs: inputs, outputs: outputs, attention: &shape}, "", nil
}

// attentionTensors are Q, K and V, read from files, and O, written to
// files.Output, each of the size shape gives it.
func attentionTensors(files sdk.Tensors, shape sdk.Shape) (inputs, outputs []tensor) {
	qBytes := int64(shape.QElements()) * int64(shape.DType.Size())
	kvBytes := int64(shape.KVElements()) * int64(shape.DType.Size())
	at := func(name, path string, bytes int64) tensor {
		return tensor{name: name, label: strings.ToUpper(name), path: path, bytes: bytes, shape: shape.String()}
	}
	return []tensor{at("q", files.Q, qBytes), at("k", files.K, kvBytes), at("v", files.V, kvBytes)},
		[]tensor{at("o", files.Output, qBytes)}
}

// opTensors checks the request's tensor files of one kind (inputs or
// outputs) against the op's declaration under params, in order, and sizes
// each from its own dims and element type: the plan's kernel indexes the
// buffers by the params, so the two must agree.
func opTensors(declared []op.Tensor, files []sdk.TensorFile, params op.Params, kind string) ([]tensor, error) {
	if len(files) != len(declared) {
		return nil, fmt.Errorf("the request has %d %s files; the op has %d %ss (%s)", len(files), kind, len(declared), kind, joinTensors(declared))
	}
	out := make([]tensor, len(files))
	for i, f := range files {
		d := declared[i]
		want := sdk.TensorFile{Name: d.Name, DType: d.ElemType(params), Dims: d.Shape(params)}
		if f.Name != want.Name || f.DType != want.DType || !slices.Equal(f.Dims, want.Dims) {
			return nil, fmt.Errorf("%s %d is %s; the op's under these params is %s", kind, i+1, tensorString(f), tensorString(want))
		}
		bytes, err := tensorBytes(f)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, f.Name, err)
		}
		out[i] = tensor{name: f.Name, label: f.Name, path: f.Path, bytes: bytes, shape: tensorString(f)}
	}
	return out, nil
}

// tensorBytes is the size of a tensor file: its elements times the size
// of its element type.
func tensorBytes(f sdk.TensorFile) (int64, error) {
	n := int64(f.DType.Size())
	if n == 0 {
		return 0, fmt.Errorf("unknown dtype %q", f.DType)
	}
	for _, d := range f.Dims {
		if d <= 0 {
			return 0, fmt.Errorf("dims %v: a size that is not positive", f.Dims)
		}
		if n > math.MaxInt64/int64(d) {
			return 0, fmt.Errorf("dims %v: too many bytes", f.Dims)
		}
		n *= int64(d)
	}
	return n, nil
}

// tensorString writes a tensor file as the docs write tensors:
// x[4, 4096] fp16.
func tensorString(f sdk.TensorFile) string {
	dims := make([]string, len(f.Dims))
	for i, d := range f.Dims {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s[%s] %s", f.Name, strings.Join(dims, ", "), f.DType)
}

func joinTensors(ts []op.Tensor) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}

// namedArg is the device address of one buffer and the name plans use for
// it.
type namedArg struct {
	name string
	arg  gpu.Arg
}

// caseArgs are the device addresses of one case's buffers.
type caseArgs struct {
	attention *sdk.Shape // for the standard parameter list; nil for other ops
	tensors   []namedArg // inputs, then outputs, in the request's order
	scratch   []namedArg // in the order of Launch.Scratch
}

// args lays out the parameters of one step of the case's plan (see
// Launch.Params).
func (c caseArgs) args(l Launch) []gpu.Arg {
	if l.Params == nil {
		var args []gpu.Arg
		if c.attention != nil {
			args = KernelArgs(c.tensors[0].arg, c.tensors[1].arg, c.tensors[2].arg, c.tensors[3].arg, *c.attention)
		} else {
			for _, t := range c.tensors {
				args = append(args, t.arg)
			}
		}
		for _, s := range c.scratch {
			args = append(args, s.arg)
		}
		return args
	}
	buffers := map[string]gpu.Arg{}
	for _, b := range slices.Concat(c.tensors, c.scratch) {
		buffers[b.name] = b.arg
	}
	args := make([]gpu.Arg, len(l.Params))
	for i, p := range l.Params {
		args[i] = p.Value
		if p.Buffer != "" {
			args[i] = buffers[p.Buffer]
		}
	}
	return args
}
