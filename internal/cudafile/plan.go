package cudafile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// tensorParams are the tensors every kernel may be given, as device
// pointers to contiguous [B, H, S, D] arrays of the case's dtype (K and V
// with H_kv heads).
var tensorParams = []string{"q", "k", "v", "o"}

// backwardTensors are the tensors a [backward] kernel may be given:
// attention's inputs and outputs in mode bwd. do and dq are laid out as q,
// dk and dv as k, and lse is fp32 [B, H, Sq] (docs/cuda.md).
var backwardTensors = []string{"q", "k", "v", "o", "do", "lse", "dq", "dk", "dv"}

// floatParams are the scale conventions: scale is 1/sqrt(D) (or the
// case's own scale), scale_log2e is scale·log2(e), for kernels that
// compute the softmax with exp2.
var floatParams = []string{"scale", "scale_log2e"}

// shapeNames are the integers formulas and params may use (docs/cuda.md).
var shapeNames = []string{
	"B", "H", "H_kv", "Sq", "Sk", "D", "causal", "group", "elem",
	"q_stride_b", "q_stride_h", "q_stride_s",
	"k_stride_b", "k_stride_h", "k_stride_s",
	"v_stride_b", "v_stride_h", "v_stride_s",
	"o_stride_b", "o_stride_h", "o_stride_s",
}

func isShapeName(n string) bool {
	return slices.Contains(shapeNames, n) || slices.Contains(tensorParams, n) || slices.Contains(floatParams, n)
}

// formulaNames are the names a formula may use: the shape's and the
// tunables'.
func formulaNames(tunables []sdk.Tunable) map[string]bool {
	known := map[string]bool{}
	for _, n := range shapeNames {
		known[n] = true
	}
	for _, t := range tunables {
		known[t.Name] = true
	}
	return known
}

// shapeVars are the values of shapeNames (and the tunables) for one case.
// Strides are in elements, of contiguous [B, H, S, D] tensors.
func shapeVars(s sdk.Shape, tunables map[string]string) (map[string]int64, error) {
	b, h, hkv, sq, sk, d := int64(s.Batch), int64(s.Heads), int64(s.KVHeads), int64(s.SeqQ), int64(s.SeqK), int64(s.HeadDim)
	causal := int64(0)
	if s.Causal {
		causal = 1
	}
	vars := map[string]int64{
		"B": b, "H": h, "H_kv": hkv, "Sq": sq, "Sk": sk, "D": d, "causal": causal,
		"group": h / max(hkv, 1), "elem": int64(s.DType.Size()),
		"q_stride_b": h * sq * d, "q_stride_h": sq * d, "q_stride_s": d,
		"o_stride_b": h * sq * d, "o_stride_h": sq * d, "o_stride_s": d,
		"k_stride_b": hkv * sk * d, "k_stride_h": sk * d, "k_stride_s": d,
		"v_stride_b": hkv * sk * d, "v_stride_h": sk * d, "v_stride_s": d,
	}
	for name, value := range tunables {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tunable %s: %q is not an integer", name, value)
		}
		vars[name] = n
	}
	return vars, nil
}

// Param is one kernel parameter of a spec: "q", "partial_o", "scale",
// "scale_log2e:f64", "Sk", "cdiv(Sk, 64)", "H*Sq*D:i64".
type Param struct {
	Text   string
	Buffer string  // a tensor or scratch buffer: a pointer
	Float  string  // scale or scale_log2e
	Int    Formula // otherwise
	Type   string  // ptr, f32, f64, i32 or i64
}

// parseParam reads one params entry of an attention kernel; known are the
// formula names (true) and scratch buffers (false), tensors the tensors the
// kernel may take.
func parseParam(text string, known map[string]bool, tensors []string) (Param, error) {
	return parseParamOf(text, known, tensors, floatParams)
}

// parseParamOf reads one params entry whose float params are floats.
func parseParamOf(text string, known map[string]bool, tensors, floats []string) (Param, error) {
	body, typ, _ := strings.Cut(text, ":")
	body = strings.TrimSpace(body)
	p := Param{Text: text, Type: typ}
	switch {
	case slices.Contains(tensors, body) || !known[body] && hasKey(known, body):
		p.Buffer = body
		if typ != "" && typ != "ptr" {
			return Param{}, fmt.Errorf("param %q: %s is a buffer, passed as a pointer", text, body)
		}
		p.Type = "ptr"
		return p, nil
	case slices.Contains(floats, body):
		p.Float = body
		if typ == "" {
			p.Type = "f32"
		}
		if p.Type != "f32" && p.Type != "f64" {
			return Param{}, fmt.Errorf("param %q: %s is a float (:f32, the default, or :f64)", text, body)
		}
		return p, nil
	}
	if typ == "" {
		p.Type = "i32"
	}
	if p.Type != "i32" && p.Type != "i64" {
		return Param{}, fmt.Errorf("param %q: an integer is :i32 (the default) or :i64", text)
	}
	f, err := ParseFormula(body, func(n string) bool { return known[n] })
	if err != nil {
		return Param{}, fmt.Errorf("param %v (a param is %s, or an integer formula)", err, strings.Join(slices.Concat(tensors, []string{"a scratch buffer"}, floats), ", "))
	}
	p.Int = f
	return p, nil
}

func hasKey(m map[string]bool, k string) bool { _, ok := m[k]; return ok }

// Plan maps a case to the launches the spec declares: the scratch buffers
// with their sizes, and each kernel with its symbol, geometry and
// parameters. Its errors say which key of the spec could not be evaluated.
func (s *Spec) Plan(shape sdk.Shape, tunables map[string]string) (cudakit.Launch, error) {
	l, err := s.plan(shape, tunables)
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("%w: %s: %w", cudakit.ErrInvalidPlan, s.Path, err)
	}
	return l, nil
}

// BackwardPlan maps a case of attention's backward to the launches of
// the spec's [backward] table, as Plan does the forward's.
func (s *Spec) BackwardPlan(c cudakit.OpCase, tunables map[string]string) (cudakit.Launch, error) {
	if s.Backward == nil {
		return cudakit.Launch{}, fmt.Errorf("%w: %s declares no [backward]", cudakit.ErrInvalidPlan, s.Path)
	}
	l, err := s.passPlan(*s.Backward, nil, attention.ShapeFrom(c.Params), tunables)
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("%w: %s: [backward]: %w", cudakit.ErrInvalidPlan, s.Path, err)
	}
	return l, nil
}

func (s *Spec) plan(shape sdk.Shape, tunables map[string]string) (cudakit.Launch, error) {
	return s.passPlan(Pass{Scratch: s.Scratch, Kernels: s.Kernels}, s.OutputReset, shape, tunables)
}

func (s *Spec) passPlan(pass Pass, outputReset *uint32, shape sdk.Shape, tunables map[string]string) (cudakit.Launch, error) {
	vars, err := shapeVars(shape, tunables)
	if err != nil {
		return cudakit.Launch{}, err
	}
	floats := map[string]float64{"scale": shape.Scale(), "scale_log2e": shape.Scale() * math.Log2E}
	return pass.plan(outputReset, vars, floats, func(entry string) string { return render(entry, shape, vars) })
}

// plan maps a case, as the values of its formula names (vars) and float
// params (floats), to the pass's launches; symbol renders a kernel's entry.
func (pass Pass) plan(outputReset *uint32, vars map[string]int64, floats map[string]float64, symbol func(string) string) (cudakit.Launch, error) {
	var scratch []cudakit.Scratch
	for _, sc := range pass.Scratch {
		n, err := sc.Bytes.Eval(vars)
		if err != nil {
			return cudakit.Launch{}, fmt.Errorf("scratch %s bytes: %w", sc.Name, err)
		}
		buf := cudakit.Scratch{Name: sc.Name, Bytes: n}
		if sc.Reset != nil {
			buf.Reset, buf.Word = true, *sc.Reset
		}
		scratch = append(scratch, buf)
	}
	var launches []cudakit.Launch
	for i, k := range pass.Kernels {
		l, err := k.launch(symbol(k.Entry), vars, floats)
		if err != nil {
			return cudakit.Launch{}, fmt.Errorf("kernel %d (%s): %w", i+1, k.Entry, err)
		}
		launches = append(launches, l)
	}
	first := launches[0]
	first.Scratch = scratch
	first.Then = launches[1:]
	if outputReset != nil {
		first.OutputReset, first.OutputWord = true, *outputReset
	}
	return first, nil
}

// Symbol is the kernel's entry with the case's parameters and the
// tunables filled in (render): "attn_fp16_d64", or for a template entry
// the template-id of its instance, "attn<half, 64, true>".
func (k Kernel) Symbol(shape sdk.Shape, tunables map[string]string) string {
	vars, _ := shapeVars(shape, tunables) // tunables are integers: the spec's validation says so
	return render(k.Entry, shape, vars)
}

// instantiated says why a template entry has no instance for the case,
// or "".
func (k Kernel) instantiated(vars map[string]int64) string {
	for _, name := range slices.Sorted(maps.Keys(k.Instances)) {
		if !slices.Contains(k.Instances[name], vars[name]) {
			return fmt.Sprintf("%s = %d is not instantiated (kernels.instances.%s lists %v)", name, vars[name], name, k.Instances[name])
		}
	}
	return ""
}

func (k Kernel) launch(function string, vars map[string]int64, floats map[string]float64) (cudakit.Launch, error) {
	l := cudakit.Launch{Function: function}
	if why := k.instantiated(vars); why != "" {
		return l, errors.New(why)
	}
	var dims [6]int
	for i, f := range append(k.Grid[:], k.Block[:]...) {
		n, err := f.Eval(vars)
		if err != nil {
			return l, fmt.Errorf("%s: %w", []string{"grid", "grid", "grid", "block", "block", "block"}[i], err)
		}
		if n < 1 || n > math.MaxInt32 {
			return l, fmt.Errorf("%s %q is %d, outside 1 to 2^31-1", []string{"grid", "grid", "grid", "block", "block", "block"}[i], f, n)
		}
		dims[i] = int(n)
	}
	l.Grid = gpu.Dim3{X: dims[0], Y: dims[1], Z: dims[2]}
	l.Block = gpu.Dim3{X: dims[3], Y: dims[4], Z: dims[5]}
	shared, err := k.SharedBytes.Eval(vars)
	if err != nil {
		return l, fmt.Errorf("shared_bytes: %w", err)
	}
	if shared < 0 {
		return l, fmt.Errorf("shared_bytes %q is %d", k.SharedBytes, shared)
	}
	l.DynamicSharedBytes = int(shared)
	l.Params = make([]cudakit.Param, 0, len(k.Params))
	for _, p := range k.Params {
		arg, err := p.value(vars, floats)
		if err != nil {
			return l, err
		}
		l.Params = append(l.Params, arg)
	}
	return l, nil
}

// arg is the param's value for an attention case.
func (p Param) arg(shape sdk.Shape, vars map[string]int64) (cudakit.Param, error) {
	return p.value(vars, map[string]float64{"scale": shape.Scale(), "scale_log2e": shape.Scale() * math.Log2E})
}

// value is the param's value where the formula names have vars and the
// float params floats.
func (p Param) value(vars map[string]int64, floats map[string]float64) (cudakit.Param, error) {
	switch {
	case p.Buffer != "":
		return cudakit.BufferParam(p.Buffer), nil
	case p.Float != "":
		x, ok := floats[p.Float]
		if !ok {
			return cudakit.Param{}, fmt.Errorf("param %q: %s has no value", p.Text, p.Float)
		}
		if p.Type == "f64" {
			return cudakit.ValueParam(gpu.Float64(x)), nil
		}
		return cudakit.ValueParam(gpu.Float32(float32(x))), nil
	}
	n, err := p.Int.Eval(vars)
	if err != nil {
		return cudakit.Param{}, fmt.Errorf("param %q: %w", p.Text, err)
	}
	if p.Type == "i64" {
		return cudakit.ValueParam(gpu.Int64(n)), nil
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return cudakit.Param{}, fmt.Errorf("param %q is %d, more than an int holds: declare it %s:i64 and take a long long", p.Text, n, strings.Split(p.Text, ":")[0])
	}
	return cudakit.ValueParam(gpu.Int32(int32(n))), nil
}

// Variant is the one variant a spec offers, named name.
func (s *Spec) Variant(name string) sdk.Variant {
	desc := s.Description
	if desc == "" {
		desc = "CUDA kernel from " + s.kernelFile()
	}
	v := sdk.Variant{Name: name, Description: desc, Capabilities: s.Capabilities, Tunables: s.Tunables}
	if len(s.Ops) == 0 {
		return v
	}
	// Op tables: the variant lists attention where the spec has its
	// kernels, and each op with its table's capabilities.
	v.OpCapabilities = map[string]sdk.Capabilities{}
	if len(s.Kernels) > 0 {
		v.Ops = append(v.Ops, attention.Name)
	} else {
		v.Capabilities = s.Ops[0].Capabilities
	}
	for _, t := range s.Ops {
		v.Ops = append(v.Ops, t.Op)
		v.OpCapabilities[t.Op] = t.Capabilities
	}
	return v
}

// RunsAttention says whether the spec has attention's kernels: a spec of
// op tables alone has none.
func (s *Spec) RunsAttention() bool { return len(s.Kernels) > 0 }

func (s *Spec) kernelFile() string {
	if s.Source != "" {
		return s.Source
	}
	return s.Binary
}
