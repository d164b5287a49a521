package cudakit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// rmsnormCaps are the capabilities of a variant that runs attention and
// rmsnorm in fp16 and bf16.
var rmsnormCaps = sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, HeadDims: []int{64}, Causal: true, NonCausal: true,
	GroupedQueryHeads: true, UnequalSeqLens: true, NeedsGPU: true}

// twoOpSpec runs attention and rmsnorm; its rmsnorm plan records the case
// it was given and passes x, weight, y, rows and cols.
func twoOpSpec(seen *OpCase) Spec {
	one := gpu.Dim3{X: 1, Y: 1, Z: 1}
	return Spec{
		Name:    "cuda-two",
		Variant: sdk.Variant{Name: "cuda-two", Ops: []string{"attention", "rmsnorm"}, Capabilities: rmsnormCaps},
		Plan: func(s sdk.Shape, _ map[string]string) (Launch, error) {
			return Launch{Function: KernelName(s.DType, s.HeadDim), Grid: one, Block: gpu.Dim3{X: 32, Y: 1, Z: 1}}, nil
		},
		Ops: map[string]OpPlan{"rmsnorm": func(c OpCase, _ map[string]string) (Launch, error) {
			*seen = c
			x, _ := c.Tensor("x")
			return Launch{Function: OpKernelName(c.Op, x.DType, "v8"), Grid: gpu.Dim3{X: x.Dims[0], Y: 1, Z: 1}, Block: gpu.Dim3{X: 64, Y: 1, Z: 1},
				Params: TensorParams(c, gpu.Int32(int32(x.Dims[0])), gpu.Int32(int32(x.Dims[1])))}, nil
		}},
	}
}

// rmsnormRequest is the request the host sends for an rmsnorm case of
// rows × cols in dtype, its files in dir.
func rmsnormRequest(dir string, rows, cols int, dtype sdk.DType) sdk.PrepareRequest {
	file := func(name string, dims ...int) sdk.TensorFile {
		return sdk.TensorFile{Name: name, Path: filepath.Join(dir, name+".bin"), DType: dtype, Dims: dims}
	}
	return sdk.PrepareRequest{
		CaseID: fmt.Sprintf("rmsnorm-r%d-c%d-%s", rows, cols, dtype), Variant: "cuda-two", Op: "rmsnorm",
		Params:  map[string]string{"rows": fmt.Sprint(rows), "cols": fmt.Sprint(cols), "dtype": string(dtype)},
		Inputs:  []sdk.TensorFile{file("x", rows, cols), file("weight", cols)},
		Outputs: []sdk.TensorFile{file("y", rows, cols)},
	}
}

func TestCheckOps(t *testing.T) {
	var seen OpCase
	good := twoOpSpec(&seen)
	with := func(f func(*Spec)) Spec {
		s := good
		s.Variant.Ops = slices.Clone(good.Variant.Ops)
		s.Ops = map[string]OpPlan{"rmsnorm": good.Ops["rmsnorm"]}
		f(&s)
		return s
	}
	tests := []struct {
		name string
		spec Spec
		want string // part of the error; "" for none
	}{
		{"attention and rmsnorm, each planned", good, ""},
		{"attention alone, as every plugin before ops", with(func(s *Spec) { s.Variant.Ops, s.Ops = nil, nil }), ""},
		{"an op the registry does not know", with(func(s *Spec) { s.Variant.Ops = append(s.Variant.Ops, "softmax") }), `unknown op "softmax"`},
		{"a listed op without a plan", with(func(s *Spec) { s.Ops = nil }), "lists op rmsnorm but the spec has no plan for it in Ops"},
		{"attention listed without Plan", with(func(s *Spec) { s.Plan = nil }), "lists op attention but the spec has no Plan"},
		{"a plan for an op not listed", with(func(s *Spec) { s.Variant.Ops = nil }), "Spec.Ops plans op rmsnorm, which variant cuda-two does not list"},
		{"attention planned in Ops", with(func(s *Spec) { s.Ops["attention"] = s.Ops["rmsnorm"] }), "op attention is planned by Spec.Plan"},
		{"a tunable of one op", with(func(s *Spec) {
			s.Variant.Tunables = []sdk.Tunable{{Name: "rows", Values: []string{"4"}, Default: "4", Ops: []string{"attention"}}}
		}), ""},
		{"a tunable of an op not listed", with(func(s *Spec) {
			s.Variant.Tunables = []sdk.Tunable{{Name: "rows", Values: []string{"4"}, Default: "4", Ops: []string{"softmax"}}}
		}), "tunable rows applies to op softmax, which variant cuda-two does not run"},
	}
	for _, tc := range tests {
		err := tc.spec.CheckOps()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && !strings.Contains(got, tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// An op the variant does not list is refused as unsupported, by name;
// a request without an op is attention's.
func TestOpsNotServedAreRefused(t *testing.T) {
	var seen OpCase
	two := twoOpSpec(&seen)
	attentionOnly := two
	attentionOnly.Variant.Ops, attentionOnly.Ops = nil, nil
	rmsnormOnly := two
	rmsnormOnly.Variant.Ops = []string{"rmsnorm"}
	tests := []struct {
		spec Spec
		op   string
		want string // "" when served
	}{
		{two, "", ""},
		{two, "attention", ""},
		{two, "rmsnorm", ""},
		{two, "softmax", "op softmax not supported: cuda-two runs attention, rmsnorm"},
		{attentionOnly, "", ""},
		{attentionOnly, "rmsnorm", "op rmsnorm not supported: cuda-two runs attention"},
		{rmsnormOnly, "", "op attention not supported: cuda-two runs rmsnorm"},
	}
	for _, tc := range tests {
		if got := tc.spec.notServed(sdk.PrepareRequest{Op: tc.op}); got != tc.want {
			t.Errorf("ops %v, request op %q: %q, want %q", tc.spec.Variant.Ops, tc.op, got, tc.want)
		}
	}
}

// The plan of an op other than attention gets the request's params and
// named files; the tensors are sized from their dims and dtype, inputs in
// the request's order (the order the hash follows).
func TestPlanOfAnOpGetsItsNamedTensors(t *testing.T) {
	var seen OpCase
	s := twoOpSpec(&seen)
	req := rmsnormRequest("/in", 3, 40, sdk.BF16)
	p, reason, err := s.plan(req, map[string]string{})
	if err != nil || reason != "" {
		t.Fatalf("plan: %q %v", reason, err)
	}
	if seen.Op != "rmsnorm" || seen.Params.Int("rows") != 3 || seen.Params.Int("cols") != 40 ||
		!slices.EqualFunc(seen.Inputs, req.Inputs, equalFiles) || !slices.EqualFunc(seen.Outputs, req.Outputs, equalFiles) {
		t.Errorf("the plan saw %+v, want the request's params and files", seen)
	}
	type sized struct {
		name, path string
		bytes      int64
	}
	var got []sized
	for _, tt := range slices.Concat(p.inputs, p.outputs) {
		got = append(got, sized{tt.name, tt.path, tt.bytes})
	}
	want := []sized{{"x", "/in/x.bin", 3 * 40 * 2}, {"weight", "/in/weight.bin", 40 * 2}, {"y", "/in/y.bin", 3 * 40 * 2}}
	if !slices.Equal(got, want) || len(p.inputs) != 2 {
		t.Errorf("tensors %+v, want %+v (two inputs)", got, want)
	}
	if p.attention != nil || p.launch.Function != "rmsnorm_bf16_v8" || p.tensorLabels() != "x, weight, y" {
		t.Errorf("planned %+v", p)
	}
}

func equalFiles(a, b sdk.TensorFile) bool {
	return a.Name == b.Name && a.Path == b.Path && a.DType == b.DType && slices.Equal(a.Dims, b.Dims)
}

// What a plan of an op other than attention cannot run is a reason (a
// skip); what is wrong with the request or the plan is an error.
func TestPlanOfAnOpRefusesAndFails(t *testing.T) {
	var seen OpCase
	base := twoOpSpec(&seen)
	tests := []struct {
		name   string
		spec   func(*Spec)
		req    func(*sdk.PrepareRequest)
		reason string // part of the reason, for a skip
		err    string // part of the error
	}{
		{name: "a dtype the variant does not declare", req: func(r *sdk.PrepareRequest) { *r = rmsnormRequest("/in", 2, 8, sdk.FP32) },
			reason: "dtype fp32 not supported"},
		{name: "more elements than the variant takes", spec: func(s *Spec) { s.Variant.Capabilities.MaxElements = 100 },
			reason: "128 elements per tensor over the backend's limit of 100"},
		{name: "the plan cannot run it", spec: func(s *Spec) {
			s.Ops["rmsnorm"] = func(OpCase, map[string]string) (Launch, error) { return Launch{}, errors.New("cols over 65536") }
		}, reason: "cols over 65536"},
		{name: "the plan is broken", spec: func(s *Spec) {
			s.Ops["rmsnorm"] = func(OpCase, map[string]string) (Launch, error) {
				return Launch{}, fmt.Errorf("%w: a formula", ErrInvalidPlan)
			}
		}, err: "invalid plan: a formula"},
		{name: "a parameter names a tensor the op lacks", spec: func(s *Spec) {
			s.Ops["rmsnorm"] = func(OpCase, map[string]string) (Launch, error) {
				return Launch{Function: "f", Grid: gpu.Dim3{X: 1, Y: 1, Z: 1}, Block: gpu.Dim3{X: 32, Y: 1, Z: 1}, Params: []Param{BufferParam("o")}}, nil
			}
		}, err: `the plan: f: parameter names buffer "o"; there are x, weight, y`},
		{name: "scratch takes a tensor's name", spec: func(s *Spec) {
			s.Ops["rmsnorm"] = func(OpCase, map[string]string) (Launch, error) {
				return Launch{Function: "f", Grid: gpu.Dim3{X: 1, Y: 1, Z: 1}, Block: gpu.Dim3{X: 32, Y: 1, Z: 1}, Scratch: []Scratch{Zeroed("y", 4)}}, nil
			}
		}, err: `scratch buffer "y": the name is taken`},
		{name: "no plan for a listed op", spec: func(s *Spec) { s.Ops = nil }, err: "lists op rmsnorm but the spec has no plan"},
		{name: "weight of another length", req: func(r *sdk.PrepareRequest) { r.Inputs[1].Dims = []int{9} },
			err: "input 2 is weight[9] fp16; the op's under these params is weight[8] fp16"},
		{name: "inputs in another order", req: func(r *sdk.PrepareRequest) { r.Inputs[0], r.Inputs[1] = r.Inputs[1], r.Inputs[0] },
			err: "input 1 is weight[8] fp16; the op's under these params is x[16, 8] fp16"},
		{name: "an output of another dtype", req: func(r *sdk.PrepareRequest) { r.Outputs[0].DType = sdk.BF16 },
			err: "output 1 is y[16, 8] bf16; the op's under these params is y[16, 8] fp16"},
		{name: "no output", req: func(r *sdk.PrepareRequest) { r.Outputs = nil },
			err: "the request has 0 output files; the op has 1 outputs (y[rows, cols] dtype)"},
		{name: "an op the registry does not know", req: func(r *sdk.PrepareRequest) { r.Op = "softmax" },
			reason: `unknown op "softmax"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Variant.Ops = slices.Clone(base.Variant.Ops)
			s.Ops = map[string]OpPlan{"rmsnorm": base.Ops["rmsnorm"]}
			if tc.spec != nil {
				tc.spec(&s)
			}
			req := rmsnormRequest("/in", 16, 8, sdk.FP16)
			if tc.req != nil {
				tc.req(&req)
			}
			_, reason, err := s.plan(req, nil)
			switch {
			case tc.reason != "" && (err != nil || !strings.Contains(reason, tc.reason)):
				t.Errorf("reason %q, error %v; want the reason %q", reason, err, tc.reason)
			case tc.err != "" && (reason != "" || err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("reason %q, error %v; want an error with %q", reason, err, tc.err)
			}
		})
	}
}

// Attention is planned from the request's Shape and Files, as before ops:
// the capability check's words, Q, K, V and O sized from the shape.
func TestPlanOfAttention(t *testing.T) {
	var seen OpCase
	s := twoOpSpec(&seen)
	shape := sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 5, SeqK: 7, HeadDim: 64, DType: sdk.FP16}
	files := sdk.Tensors{Q: "/in/q", K: "/in/k", V: "/in/v", Output: "/in/o"}
	p, reason, err := s.plan(sdk.PrepareRequest{Shape: shape, Files: files}, nil)
	if err != nil || reason != "" {
		t.Fatalf("plan: %q %v", reason, err)
	}
	var got []string
	for _, tt := range slices.Concat(p.inputs, p.outputs) {
		got = append(got, fmt.Sprintf("%s %s %s %d", tt.name, tt.label, tt.path, tt.bytes))
	}
	want := []string{"q Q /in/q 2560", "k K /in/k 1792", "v V /in/v 1792", "o O /in/o 2560"}
	if !slices.Equal(got, want) || p.attention == nil || *p.attention != shape || p.launch.Function != "attn_fwd_fp16_d64" {
		t.Errorf("planned %v %+v, want %v", got, p, want)
	}
	shape.HeadDim = 128
	if _, reason, err := s.plan(sdk.PrepareRequest{Op: "attention", Shape: shape, Files: files}, nil); err != nil ||
		reason != "head dim 128 not supported (supported: [64])" {
		t.Errorf("head dim 128: %q %v", reason, err)
	}
}

// Without Params a kernel gets attention's standard list, or an op's
// tensors in order; either way the scratch follows. With Params, buffers
// are looked up by name among the tensors and the scratch.
func TestCaseArgs(t *testing.T) {
	shape := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 2, SeqQ: 77, SeqK: 131, HeadDim: 64, DType: sdk.FP16, Causal: true}
	attn := caseArgs{attention: &shape,
		tensors: []namedArg{{"q", 0x1000}, {"k", 0x2000}, {"v", 0x3000}, {"o", 0x4000}},
		scratch: []namedArg{{"partial", 0x5000}}}
	op := caseArgs{tensors: []namedArg{{"x", 0x100}, {"weight", 0x200}, {"y", 0x300}}, scratch: []namedArg{{"sums", 0x400}}}
	one := gpu.Dim3{X: 1, Y: 1, Z: 1}
	tests := []struct {
		name string
		c    caseArgs
		l    Launch
		want []gpu.Arg
	}{
		{"attention's standard list", attn, Launch{},
			append(KernelArgs(0x1000, 0x2000, 0x3000, 0x4000, shape), 0x5000)},
		{"attention's own list", attn, Launch{Params: []Param{BufferParam("o"), BufferParam("partial"), ValueParam(gpu.Int32(7))}},
			[]gpu.Arg{0x4000, 0x5000, 7}},
		{"an op's tensors in order", op, Launch{}, []gpu.Arg{0x100, 0x200, 0x300, 0x400}},
		{"an op's tensors, then its scalars", op,
			Launch{Params: TensorParams(OpCase{Inputs: []sdk.TensorFile{{Name: "x"}, {Name: "weight"}}, Outputs: []sdk.TensorFile{{Name: "y"}}},
				gpu.Int32(3), gpu.Int32(4096))},
			[]gpu.Arg{0x100, 0x200, 0x300, 3, 4096}},
		{"an op's list with scratch", op, Launch{Params: []Param{BufferParam("sums"), BufferParam("y")}, Then: []Launch{{Function: "g", Grid: one, Block: one}}},
			[]gpu.Arg{0x400, 0x300}},
	}
	for _, tc := range tests {
		if got := tc.c.args(tc.l); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

// The input hash is over every input's bytes in the request's order; each
// file must hold the bytes its dims and dtype give.
func TestReadTensorsHashesTheInputsInOrder(t *testing.T) {
	dir := t.TempDir()
	req := rmsnormRequest(dir, 2, 4, sdk.FP32)
	x, w := strings.Repeat("x", 32), strings.Repeat("w", 16)
	for path, data := range map[string]string{req.Inputs[0].Path: x, req.Inputs[1].Path: w} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := twoOpSpec(new(OpCase))
	spec.Variant.Capabilities.DTypes = append(spec.Variant.Capabilities.DTypes, sdk.FP32)
	p, reason, err := spec.plan(req, nil)
	if err != nil || reason != "" {
		t.Fatalf("plan: %q %v", reason, err)
	}
	in, err := readTensors(p.inputs)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(x + w))
	if want := hex.EncodeToString(sum[:]); in.sha256 != want || in.bytes() != 48 {
		t.Errorf("hash %s over %d bytes, want the hash of x and weight concatenated, %s, over 48", in.sha256, in.bytes(), want)
	}
	if err := os.WriteFile(req.Inputs[1].Path, []byte(w[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTensors(p.inputs); err == nil || !strings.Contains(err.Error(), "weight input") ||
		!strings.Contains(err.Error(), "has 15 bytes, want 16 for weight[4] fp32") {
		t.Errorf("short weight: %v", err)
	}
}

func TestTimedOutputPaths(t *testing.T) {
	outputs := []sdk.TensorFile{{Name: "y", Path: "/t/y.bin"}, {Name: "stats", Path: "/t/stats.bin"}}
	tests := []struct {
		name  string
		req   sdk.RunRequest
		names []string
		want  string // the paths joined, or the error
	}{
		{"none asked for", sdk.RunRequest{}, []string{"o"}, ""},
		{"Output alone, as protocol 1 asked", sdk.RunRequest{Output: "/t/o.bin"}, []string{"o"}, "/t/o.bin"},
		{"every output", sdk.RunRequest{Output: "/t/y.bin", Outputs: outputs}, []string{"y", "stats"}, "/t/y.bin /t/stats.bin"},
		{"one output short", sdk.RunRequest{Output: "/t/y.bin", Outputs: outputs[:1]}, []string{"y", "stats"}, "1 timed output files for the case's 2 outputs"},
		{"another output", sdk.RunRequest{Outputs: outputs[1:]}, []string{"y"}, `timed output file 1 is for "stats"; the case's output 1 is "y"`},
	}
	for _, tc := range tests {
		paths, err := timedOutputPaths(tc.req, tc.names)
		got := strings.Join(paths, " ")
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOpKernelName(t *testing.T) {
	if got := OpKernelName("rmsnorm", sdk.BF16, "v8"); got != "rmsnorm_bf16_v8" {
		t.Errorf("OpKernelName = %s", got)
	}
}

// backwardSpec runs attention forward and backward; its backward plan
// records the case it was given and launches a dK/dV kernel and then a dQ
// kernel, each given the case's tensors in order.
func backwardSpec(seen *OpCase) Spec {
	var none OpCase
	s := twoOpSpec(&none)
	s.Variant.Ops, s.Ops = nil, nil
	s.Variant.Capabilities.Modes = []sdk.Mode{sdk.Forward, sdk.Backward}
	s.ModePlans = map[sdk.Mode]OpPlan{sdk.Backward: func(c OpCase, _ map[string]string) (Launch, error) {
		*seen = c
		dq, _ := c.Tensor("dq")
		one := gpu.Dim3{X: 1, Y: 1, Z: 1}
		return Launch{Function: ModeKernelName(sdk.Backward, dq.DType, dq.Dims[3], "dkdv"), Grid: one, Block: gpu.Dim3{X: 64, Y: 1, Z: 1},
			Params: TensorParams(c), Then: []Launch{{Function: ModeKernelName(sdk.Backward, dq.DType, dq.Dims[3], "dq"), Grid: one,
				Block: gpu.Dim3{X: 128, Y: 1, Z: 1}, Params: TensorParams(c)}}}, nil
	}}
	return s
}

// attentionRequest is the request the host sends for an attention case of
// shape s, its files in dir named after the mode's tensors.
func attentionRequest(dir string, s sdk.Shape) sdk.PrepareRequest {
	c := attention.NewCase(s, op.Normal)
	files := func(ts []op.Tensor) []sdk.TensorFile {
		out := make([]sdk.TensorFile, len(ts))
		for i, t := range ts {
			out[i] = sdk.TensorFile{Name: t.Name, Path: filepath.Join(dir, t.Name+".bin"), DType: t.ElemType(c.Params), Dims: t.Shape(c.Params)}
		}
		return out
	}
	return ops.PrepareRequest(c, "cuda-two", nil, files(attention.Spec.InputsOf(c.Params)), files(attention.Spec.OutputsOf(c.Params)), "")
}

func TestCheckOpsOfModes(t *testing.T) {
	var seen OpCase
	good := backwardSpec(&seen)
	with := func(f func(*Spec)) Spec {
		s := good
		s.Variant.Capabilities.Modes = slices.Clone(good.Variant.Capabilities.Modes)
		s.ModePlans = map[sdk.Mode]OpPlan{sdk.Backward: good.ModePlans[sdk.Backward]}
		f(&s)
		return s
	}
	tests := []struct {
		name string
		spec Spec
		want string // part of the error; "" for none
	}{
		{"forward and backward, each planned", good, ""},
		{"backward alone", with(func(s *Spec) { s.Variant.Capabilities.Modes = []sdk.Mode{sdk.Backward} }), ""},
		{"forward alone, as every plugin before modes", with(func(s *Spec) { s.Variant.Capabilities.Modes, s.ModePlans = nil, nil }), ""},
		{"a declared mode without a plan", with(func(s *Spec) { s.ModePlans = nil }),
			"variant cuda-two declares attention mode bwd but the spec has no plan for it in ModePlans"},
		{"a plan for a mode not declared", with(func(s *Spec) { s.Variant.Capabilities.Modes = nil }),
			"Spec.ModePlans plans attention mode bwd, which variant cuda-two does not declare"},
		{"a plan for fwd+bwd not declared", with(func(s *Spec) { s.ModePlans[sdk.ForwardBackward] = s.ModePlans[sdk.Backward] }),
			"Spec.ModePlans plans attention mode fwd+bwd, which variant cuda-two does not declare"},
		{"forward planned in ModePlans", with(func(s *Spec) { s.ModePlans[sdk.Forward] = s.ModePlans[sdk.Backward] }),
			"attention mode fwd is planned by Spec.Plan"},
		{"an unknown mode declared", with(func(s *Spec) { s.Variant.Capabilities.Modes = append(s.Variant.Capabilities.Modes, "bwd2") }),
			`declares attention mode "bwd2", which is unknown`},
		{"modes planned for a variant without attention", with(func(s *Spec) {
			s.Variant.Ops, s.Ops = []string{"rmsnorm"}, map[string]OpPlan{"rmsnorm": twoOpSpec(new(OpCase)).Ops["rmsnorm"]}
		}), "Spec.ModePlans plans attention mode bwd, but variant cuda-two does not run attention"},
	}
	for _, tc := range tests {
		err := tc.spec.CheckOps()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && !strings.Contains(got, tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Attention backward is planned from the mode's named tensors, as an op
// other than attention is: q, k, v, o, do and lse in, in that order (the
// order the hash follows), dq, dk and dv out, each sized from its dims.
func TestPlanOfAttentionBackwardGetsTheModesTensors(t *testing.T) {
	var seen OpCase
	s := backwardSpec(&seen)
	shape := sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 5, SeqK: 7, HeadDim: 64, DType: sdk.BF16, Causal: true, Mode: sdk.Backward}
	req := attentionRequest("/in", shape)
	p, reason, err := s.plan(req, nil)
	if err != nil || reason != "" {
		t.Fatalf("plan: %q %v", reason, err)
	}
	if seen.Op != "attention" || seen.Params["mode"] != "bwd" || attention.ShapeFrom(seen.Params) != shape ||
		!slices.EqualFunc(seen.Inputs, req.Inputs, equalFiles) || !slices.EqualFunc(seen.Outputs, req.Outputs, equalFiles) {
		t.Errorf("the plan saw %+v, want the request's params and files", seen)
	}
	var got []string
	for _, tt := range slices.Concat(p.inputs, p.outputs) {
		got = append(got, fmt.Sprintf("%s %s %d", tt.name, tt.path, tt.bytes))
	}
	q, kv := 4*5*64*2, 2*7*64*2
	want := []string{
		fmt.Sprintf("q /in/q.bin %d", q), fmt.Sprintf("k /in/k.bin %d", kv), fmt.Sprintf("v /in/v.bin %d", kv),
		fmt.Sprintf("o /in/o.bin %d", q), fmt.Sprintf("do /in/do.bin %d", q), fmt.Sprintf("lse /in/lse.bin %d", 4*5*4),
		fmt.Sprintf("dq /in/dq.bin %d", q), fmt.Sprintf("dk /in/dk.bin %d", kv), fmt.Sprintf("dv /in/dv.bin %d", kv),
	}
	if !slices.Equal(got, want) || len(p.inputs) != 6 {
		t.Errorf("tensors\n%v, want\n%v (six inputs)", got, want)
	}
	if p.attention != nil || p.launch.Function != "attn_bwd_bf16_d64_dkdv" || len(p.launch.Then) != 1 || p.tensorLabels() != "q, k, v, o, do, lse, dq, dk, dv" {
		t.Errorf("planned %+v", p)
	}
}

// A mode the variant does not declare, or declares without a plan, is a
// reason (a skip), checked before the tensors; a request whose shape and
// params are two cases, or whose files are not the mode's, is an error.
// Forward requests keep their Shape-and-Files path.
func TestPlanOfAttentionModesRefusesAndFails(t *testing.T) {
	shape := sdk.Shape{Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 33, SeqK: 33, HeadDim: 64, DType: sdk.FP16, Mode: sdk.Backward}
	tests := []struct {
		name   string
		spec   func(*Spec)
		req    func(*sdk.PrepareRequest)
		reason string // part of the reason, for a skip
		err    string // part of the error
		fn     string // the function planned, when neither
	}{
		{name: "backward", fn: "attn_bwd_fp16_d64_dkdv"},
		{name: "backward from the shape alone", req: func(r *sdk.PrepareRequest) { r.Params = nil }, fn: "attn_bwd_fp16_d64_dkdv"},
		{name: "backward from the params alone", req: func(r *sdk.PrepareRequest) { r.Shape = sdk.Shape{} }, fn: "attn_bwd_fp16_d64_dkdv"},
		{name: "forward", req: func(r *sdk.PrepareRequest) {
			f := shape
			f.Mode = ""
			*r = attentionRequest("/in", f)
		}, fn: "attn_fwd_fp16_d64"},
		{name: "a mode the variant does not declare", spec: func(s *Spec) { s.Variant.Capabilities.Modes, s.ModePlans = nil, nil },
			reason: "mode bwd not supported (runs: fwd)"},
		{name: "fwd+bwd, not declared", req: func(r *sdk.PrepareRequest) {
			f := shape
			f.Mode = sdk.ForwardBackward
			*r = attentionRequest("/in", f)
		}, reason: "mode fwd+bwd not supported (runs: fwd, bwd)"},
		{name: "a declared mode without a plan", spec: func(s *Spec) { s.ModePlans = nil },
			reason: "mode bwd not supported: cuda-two has no plan for it"},
		{name: "a head dim the variant does not declare", req: func(r *sdk.PrepareRequest) {
			f := shape
			f.HeadDim = 128
			*r = attentionRequest("/in", f)
		}, reason: "head dim 128 not supported"},
		{name: "shape and params disagree", req: func(r *sdk.PrepareRequest) { r.Shape.SeqK = 34 },
			err: "the request's shape B2 H2 S33x34 D64 fp16 bwd and its params (B2 H2 S33 D64 fp16 bwd) are not the same case"},
		{name: "params of another mode", req: func(r *sdk.PrepareRequest) { r.Params["mode"] = "fwd" },
			err: "are not the same case"},
		{name: "the forward's files", req: func(r *sdk.PrepareRequest) { r.Inputs, r.Outputs = r.Inputs[:3], r.Outputs[:1] },
			err: "the request has 3 input files; the op has 6 inputs"},
		{name: "lse in the dtype", req: func(r *sdk.PrepareRequest) { r.Inputs[5].DType = sdk.FP16 },
			err: "input 6 is lse[2, 2, 33] fp16; the op's under these params is lse[2, 2, 33] fp32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen OpCase
			s := backwardSpec(&seen)
			if tc.spec != nil {
				tc.spec(&s)
			}
			req := attentionRequest("/in", shape)
			if tc.req != nil {
				tc.req(&req)
			}
			p, reason, err := s.plan(req, nil)
			switch {
			case tc.reason != "" && (err != nil || !strings.Contains(reason, tc.reason)):
				t.Errorf("reason %q, error %v; want the reason %q", reason, err, tc.reason)
			case tc.err != "" && (reason != "" || err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("reason %q, error %v; want an error with %q", reason, err, tc.err)
			case tc.fn != "" && (err != nil || reason != "" || p.launch.Function != tc.fn):
				t.Errorf("planned %s (reason %q, error %v), want %s", p.launch.Function, reason, err, tc.fn)
			}
		})
	}
}

func TestModeKernelName(t *testing.T) {
	tests := []struct {
		mode sdk.Mode
		want string
	}{
		{"", "attn_fwd_fp16_d64_x"},
		{sdk.Forward, "attn_fwd_fp16_d64_x"},
		{sdk.Backward, "attn_bwd_fp16_d64_x"},
		{sdk.ForwardBackward, "attn_fwdbwd_fp16_d64_x"},
	}
	for _, tc := range tests {
		if got := ModeKernelName(tc.mode, sdk.FP16, 64, "x"); got != tc.want {
			t.Errorf("ModeKernelName(%q) = %s, want %s", tc.mode, got, tc.want)
		}
	}
}
