package cudascalar

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

func TestPlanGeometry(t *testing.T) {
	tests := []struct {
		seqQ  int
		rows  string
		name  string
		tiles int
	}{
		{64, "8", "attn_fwd_fp16_d64_rows8", 8},
		{77, "8", "attn_fwd_fp16_d64_rows8", 10},
		{77, "16", "attn_fwd_fp16_d64_rows16", 5},
		{1, "4", "attn_fwd_fp16_d64_rows4", 1},
	}
	for _, tc := range tests {
		s := sdk.Shape{Batch: 3, Heads: 5, KVHeads: 5, SeqQ: tc.seqQ, SeqK: 9, HeadDim: 64, DType: sdk.FP16}
		l, err := plan(s, map[string]string{rowsPerBlock: tc.rows})
		if err != nil {
			t.Fatal(err)
		}
		if l.Function != tc.name || l.Grid.X != tc.tiles || l.Grid.Y != 5 || l.Grid.Z != 3 || l.DynamicSharedBytes != 0 {
			t.Errorf("plan(Sq %d, rows %s) = %+v, want %s with %d tiles", tc.seqQ, tc.rows, l, tc.name, tc.tiles)
		}
		if rows := l.Block.X / 32; l.Block.X%32 != 0 || rows*l.Grid.X < tc.seqQ {
			t.Errorf("plan(Sq %d, rows %s): block %+v x %d tiles does not cover every row", tc.seqQ, tc.rows, l.Block, l.Grid.X)
		}
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}

// rmsnormCases are rmsnorm cases in every dtype the kernel is built for,
// with rows whose length takes whole 16-byte vectors and rows whose length
// does not, short rows and rows longer than a block's threads.
func rmsnormCases(t *testing.T) []op.Case {
	var params []op.Params
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		for _, rc := range [][2]int{{1, 64}, {5, 33}, {7, 1000}, {17, 8195}, {64, 12288}, {4096, 4096}} {
			params = append(params, op.Params{"rows": strconv.Itoa(rc[0]), "cols": strconv.Itoa(rc[1]), "dtype": string(dtype)})
		}
	}
	return cudatest.OpCases(t, rmsnorm.Name, params...)
}

func TestRMSNormPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckOpPlans(t, spec(), kernelSource, rmsnormCases(t))
}

// The variant runs attention and rmsnorm, each with its own capabilities:
// fp32 rmsnorm runs, fp32 attention is skipped with a reason, and so is
// every op the variant does not list.
func TestDeclaresAttentionAndRMSNorm(t *testing.T) {
	v := spec().Variant
	if !slices.Equal(v.Ops, []string{"attention", "rmsnorm"}) || !slices.Equal(v.Capabilities.DTypes, []sdk.DType{sdk.FP16, sdk.BF16}) ||
		!slices.Equal(v.Capabilities.HeadDims, []int{64, 128}) || !v.Capabilities.NeedsGPU ||
		!slices.Equal(v.CapabilitiesOf(rmsnorm.Name).DTypes, []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}) || !v.CapabilitiesOf(rmsnorm.Name).NeedsGPU {
		t.Errorf("variant %+v", v)
	}
	if err := spec().CheckOps(); err != nil {
		t.Error(err)
	}
	param := func(rows, cols int, dtype sdk.DType) op.Params {
		return op.Params{"rows": strconv.Itoa(rows), "cols": strconv.Itoa(cols), "dtype": string(dtype)}
	}
	cases := cudatest.OpCases(t, rmsnorm.Name, param(8, 4096, sdk.FP16), param(8, 4096, sdk.BF16), param(8, 4096, sdk.FP32))
	attentionFP32 := attention.NewCase(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 64, SeqK: 64, HeadDim: 64, DType: sdk.FP32}, op.Normal)
	cases = append(cases, attentionFP32)
	for i, want := range []string{"", "", "", "dtype fp32 not supported"} {
		if got := ops.Unsupported(v, cases[i]); got != want {
			t.Errorf("%s: %q, want %q", cases[i].ID, got, want)
		}
	}
	if ops.Supports(v, "softmax") {
		t.Error("the variant claims an op it has no plan for")
	}
}

// planRMSNorm: a block per row, 16-byte vectors where they divide the row,
// whole warps up to 1024 threads, and x, weight, y, rows, cols as the
// kernel's parameters.
func TestRMSNormPlanGeometry(t *testing.T) {
	tests := []struct {
		rows, cols int
		dtype      sdk.DType
		name       string
		threads    int
	}{
		{1, 64, sdk.FP16, "rmsnorm_fp16_v8", 32},
		{5, 33, sdk.FP16, "rmsnorm_fp16_v1", 64},
		{4096, 4096, sdk.BF16, "rmsnorm_bf16_v8", 512},
		{64, 12288, sdk.BF16, "rmsnorm_bf16_v8", 1024},
		{17, 8195, sdk.BF16, "rmsnorm_bf16_v1", 1024},
		{3, 4100, sdk.FP32, "rmsnorm_fp32_v4", 1024},
		{3, 4102, sdk.FP32, "rmsnorm_fp32_v1", 1024},
		{9, 100, sdk.FP32, "rmsnorm_fp32_v4", 32},
	}
	for _, tc := range tests {
		file := func(name string, dims ...int) sdk.TensorFile {
			return sdk.TensorFile{Name: name, Path: "/in/" + name, DType: tc.dtype, Dims: dims}
		}
		c := cudakit.OpCase{Op: rmsnorm.Name,
			Params:  op.Params{"rows": strconv.Itoa(tc.rows), "cols": strconv.Itoa(tc.cols), "dtype": string(tc.dtype)},
			Inputs:  []sdk.TensorFile{file("x", tc.rows, tc.cols), file("weight", tc.cols)},
			Outputs: []sdk.TensorFile{file("y", tc.rows, tc.cols)}}
		l, err := planRMSNorm(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := cudakit.Launch{Function: tc.name, Grid: gpu.Dim3{X: tc.rows, Y: 1, Z: 1}, Block: gpu.Dim3{X: tc.threads, Y: 1, Z: 1},
			Params: []cudakit.Param{cudakit.BufferParam("x"), cudakit.BufferParam("weight"), cudakit.BufferParam("y"),
				cudakit.ValueParam(gpu.Int32(int32(tc.rows))), cudakit.ValueParam(gpu.Int32(int32(tc.cols)))}}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("planRMSNorm(%dx%d %s) = %+v, want %+v", tc.rows, tc.cols, tc.dtype, l, want)
		}
	}
}
