package cudatest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

func rmsnormParams(rows, cols int, dtype sdk.DType) op.Params {
	return op.Params{"rows": fmt.Sprint(rows), "cols": fmt.Sprint(cols), "dtype": string(dtype)}
}

func TestInstantiatedOpKernels(t *testing.T) {
	source := []byte("SCALAR_KERNEL(attn_fwd_fp16_d64_rows4, half, 64, 4)\n" +
		"RMSNORM_KERNEL(rmsnorm_fp16_v8, half, 8)\n" +
		"RMS_NORM_KERNEL(rmsnorm_fp32_v1, float, 1)\n" +
		"  RMSNORM_KERNEL(rmsnorm_commented_out, half, 8)\n" +
		"SOFTMAX_KERNEL(softmax_fp16, half)\n")
	if got := InstantiatedOpKernels(source, "rmsnorm"); !slices.Equal(got, []string{"rmsnorm_fp16_v8", "rmsnorm_fp32_v1"}) {
		t.Errorf("InstantiatedOpKernels = %v", got)
	}
	if got := InstantiatedKernels(source); !slices.Equal(got, []string{"attn_fwd_fp16_d64_rows4"}) {
		t.Errorf("InstantiatedKernels = %v: only attention's", got)
	}
}

// An rmsnorm plan that takes whole 16-byte vectors where the row allows
// and single elements elsewhere reaches both of its instantiations; the
// plan sees the files the host names, sized by the params.
func TestCheckOpPlansReachEveryOpKernel(t *testing.T) {
	planned := 0
	spec := cudakit.Spec{
		Name:    "two-ops",
		Variant: sdk.Variant{Name: "two-ops", Ops: []string{"attention", "rmsnorm"}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}}},
		Plan:    func(sdk.Shape, map[string]string) (cudakit.Launch, error) { return cudakit.Launch{}, nil },
		Ops: map[string]cudakit.OpPlan{"rmsnorm": func(c cudakit.OpCase, _ map[string]string) (cudakit.Launch, error) {
			planned++
			x, _ := c.Tensor("x")
			w, _ := c.Tensor("weight")
			if x.Dims[0] != c.Params.Int("rows") || x.Dims[1] != c.Params.Int("cols") || !slices.Equal(w.Dims, x.Dims[1:]) || x.DType != c.Params.DType("dtype") {
				t.Errorf("the plan got x%v %s and weight%v for params %v", x.Dims, x.DType, w.Dims, c.Params)
			}
			vec := "v8"
			if x.Dims[1]%8 != 0 {
				vec = "v1"
			}
			return cudakit.Launch{Function: cudakit.OpKernelName(c.Op, x.DType, vec), Grid: gpu.Dim3{X: x.Dims[0], Y: 1, Z: 1},
				Block: gpu.Dim3{X: 64, Y: 1, Z: 1}, Params: cudakit.TensorParams(c, gpu.Int32(int32(x.Dims[1])))}, nil
		}},
	}
	source := []byte("RMSNORM_KERNEL(rmsnorm_fp16_v8, half, 8)\nRMSNORM_KERNEL(rmsnorm_fp16_v1, half, 1)\n")
	CheckOpPlans(t, spec, source, OpCases(t, "rmsnorm", rmsnormParams(3, 64, sdk.FP16), rmsnormParams(2, 100, sdk.FP16)))
	if planned != 2 {
		t.Errorf("planned %d cases, want 2", planned)
	}
}

// The op's own tunables are swept, every combination, and each kernel they
// reach counts as planned; a tunable of another op is never passed to the
// op's plan.
func TestCheckOpPlansSweepTheOpsTunables(t *testing.T) {
	var combos []string
	spec := cudakit.Spec{
		Name: "tuned",
		Variant: sdk.Variant{Name: "tuned", Ops: []string{"attention", "rmsnorm"}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}},
			Tunables: []sdk.Tunable{
				{Name: "rows", Values: []string{"4", "8"}, Default: "4", Ops: []string{"attention"}},
				{Name: "vec", Values: []string{"1", "8"}, Default: "8", Ops: []string{"rmsnorm"}},
				{Name: "unroll", Values: []string{"1", "2"}, Default: "1", Ops: []string{"rmsnorm"}},
			}},
		Plan: func(sdk.Shape, map[string]string) (cudakit.Launch, error) { return cudakit.Launch{}, nil },
		Ops: map[string]cudakit.OpPlan{"rmsnorm": func(c cudakit.OpCase, tun map[string]string) (cudakit.Launch, error) {
			if _, ok := tun["rows"]; ok {
				t.Errorf("the rmsnorm plan got attention's tunable: %v", tun)
			}
			combos = append(combos, tun["vec"]+"/"+tun["unroll"])
			x, _ := c.Tensor("x")
			return cudakit.Launch{Function: cudakit.OpKernelName(c.Op, x.DType, "v"+tun["vec"]), Grid: gpu.Dim3{X: x.Dims[0], Y: 1, Z: 1},
				Block: gpu.Dim3{X: 64, Y: 1, Z: 1}, Params: cudakit.TensorParams(c, gpu.Int32(int32(x.Dims[1])))}, nil
		}},
	}
	source := []byte("RMSNORM_KERNEL(rmsnorm_fp16_v8, half, 8)\nRMSNORM_KERNEL(rmsnorm_fp16_v1, half, 1)\n")
	CheckOpPlans(t, spec, source, OpCases(t, "rmsnorm", rmsnormParams(3, 64, sdk.FP16)))
	slices.Sort(combos)
	if want := []string{"1/1", "1/2", "8/1", "8/2"}; !slices.Equal(combos, want) {
		t.Errorf("planned with %v, want every combination %v", combos, want)
	}
}

// fakeRMSNorm is an in-process rmsnorm backend that computes in fp64 on
// the host: what CheckOp drives a CUDA plugin through, checked here
// without a GPU.
type fakeRMSNorm struct {
	cases map[string]sdk.PrepareRequest
}

func (f *fakeRMSNorm) Describe(context.Context) (sdk.Description, error) {
	return sdk.Description{Name: "fake", Version: "1", Available: true, Device: sdk.Device{Kind: "cpu"},
		Variants: []sdk.Variant{{Name: "fake", Ops: []string{rmsnorm.Name}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.FP32}}}}}, nil
}

func (f *fakeRMSNorm) Prepare(_ context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if req.Op != rmsnorm.Name {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported, Summary: "op " + req.Op + " not supported"}}}, nil
	}
	h := sha256.New()
	for _, in := range req.Inputs {
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return sdk.Prepared{}, err
		}
		h.Write(data)
	}
	f.cases[req.CaseID] = req
	facts := map[string]string{}
	for _, k := range FactsEveryCaseRecords {
		facts[k] = "-"
	}
	return sdk.Prepared{LoadedSHA256: hex.EncodeToString(h.Sum(nil)), Facts: facts}, nil
}

func (f *fakeRMSNorm) write(req sdk.PrepareRequest, path string) error {
	x, _ := os.ReadFile(req.Inputs[0].Path)
	w, _ := os.ReadFile(req.Inputs[1].Path)
	rows, cols, dtype := req.Inputs[0].Dims[0], req.Inputs[0].Dims[1], req.Inputs[0].DType
	var y []float64
	for _, row := range rmsnorm.Reference(x, w, dtype, cols, seq(rows)) {
		y = append(y, row...)
	}
	return os.WriteFile(path, inputs.Encode(dtype, y), 0o644)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func (f *fakeRMSNorm) Fetch(_ context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	c := f.cases[req.CaseID]
	return sdk.Fetched{}, f.write(c, c.Outputs[0].Path)
}

func (f *fakeRMSNorm) Run(_ context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	if len(req.Outputs) != 1 || req.Outputs[0].Path != req.Output || req.Outputs[0].Name != "y" {
		return sdk.Samples{}, fmt.Errorf("timed outputs %+v, want y at %s", req.Outputs, req.Output)
	}
	kernel := slices.Repeat([]time.Duration{time.Microsecond}, req.Measurement.MinSamples)
	calls := slices.Repeat([]time.Duration{2 * time.Microsecond}, req.Measurement.CallSamples)
	return sdk.Samples{KernelTimes: kernel, CallTimes: calls, Method: "fake"}, f.write(f.cases[req.CaseID], req.Output)
}

func (f *fakeRMSNorm) Release(_ context.Context, req sdk.ReleaseRequest) error {
	delete(f.cases, req.CaseID)
	return nil
}

// CheckOp drives a backend that computes rmsnorm right through every step
// without a complaint: the request it makes (op, params, named files,
// hash) is the one the host makes.
func TestCheckOpPassesACorrectBackend(t *testing.T) {
	CheckOp(t, &fakeRMSNorm{cases: map[string]sdk.PrepareRequest{}},
		OpCases(t, "rmsnorm", rmsnormParams(3, 64, sdk.FP16), rmsnormParams(5, 33, sdk.FP32)))
}
