package cudatest

import (
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func TestFlopsCountsUnmaskedPairs(t *testing.T) {
	s := sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 4, SeqK: 2, HeadDim: 1, Causal: true}
	if got := flops(s); got != 4*(1+2+2+2) {
		t.Errorf("flops = %v, want 28", got)
	}
}

// A narrow kernel (fp32 only, no masking, whole 32-row tiles, a split step
// with scratch and a combine step on another grid) is planned only on
// shapes it declared: CheckPlans forces no causal masking, GQA, Sq != Sk,
// odd length or other dtype on it, and takes its grid rule as it is.
func TestCheckPlansKeepsToTheDeclaredCapabilities(t *testing.T) {
	caps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP32}, HeadDims: []int{64}, NonCausal: true, SeqMultiple: 32, NeedsGPU: true}
	planned := 0
	spec := cudakit.Spec{
		Name:    "narrow",
		Variant: sdk.Variant{Name: "narrow", Capabilities: caps},
		Plan: func(s sdk.Shape, _ map[string]string) (cudakit.Launch, error) {
			planned++
			if reason := caps.Unsupported(s); reason != "" {
				t.Errorf("planned %s outside the declaration: %s", s, reason)
			}
			one := gpu.Dim3{X: 1, Y: 1, Z: 1}
			return cudakit.Launch{
				Function: "attn_fwd_fp32_d64_split", Grid: gpu.Dim3{X: s.Batch * s.Heads, Y: 4, Z: 1}, Block: gpu.Dim3{X: 64, Y: 1, Z: 1},
				Scratch: []cudakit.Scratch{{Name: "partial", Bytes: int64(4 * s.QElements() * 4), Reset: true}},
				Then:    []cudakit.Launch{{Function: "attn_fwd_fp32_d64_combine", Grid: one, Block: gpu.Dim3{X: 32, Y: 1, Z: 1}}},
			}, nil
		},
	}
	source := []byte("NARROW_KERNEL(attn_fwd_fp32_d64_split, float)\nNARROW_KERNEL(attn_fwd_fp32_d64_combine, float)\n")
	CheckPlans(t, spec, source)
	if planned == 0 {
		t.Error("CheckPlans planned no case")
	}
}

// A variant that declares backward has its backward plan checked on the
// conformance shapes in mode bwd, with the mode's named tensors: here a
// dK/dV kernel per head dim and a dQ kernel, each reached, each given
// only the case's tensors.
func TestCheckPlansCoversTheDeclaredModes(t *testing.T) {
	caps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, HeadDims: []int{64, 128}, Causal: true, NonCausal: true,
		GroupedQueryHeads: true, UnequalSeqLens: true, NeedsGPU: true, Modes: []sdk.Mode{sdk.Forward, sdk.Backward}}
	planned := 0
	spec := cudakit.Spec{
		Name:    "two-modes",
		Variant: sdk.Variant{Name: "two-modes", Capabilities: caps},
		Plan: func(s sdk.Shape, _ map[string]string) (cudakit.Launch, error) {
			return cudakit.Launch{Function: cudakit.KernelName(s.DType, s.HeadDim), Grid: gpu.Dim3{X: 1, Y: 1, Z: 1}, Block: gpu.Dim3{X: 32, Y: 1, Z: 1}}, nil
		},
		ModePlans: map[sdk.Mode]cudakit.OpPlan{sdk.Backward: func(c cudakit.OpCase, _ map[string]string) (cudakit.Launch, error) {
			planned++
			s := attention.ShapeFrom(c.Params)
			if s.Mode != sdk.Backward || len(c.Inputs) != 6 || len(c.Outputs) != 3 {
				t.Errorf("the backward plan got %s with %d inputs and %d outputs", s, len(c.Inputs), len(c.Outputs))
			}
			grid := gpu.Dim3{X: 1, Y: s.KVHeads, Z: s.Batch}
			return cudakit.Launch{
				Function: cudakit.ModeKernelName(sdk.Backward, s.DType, s.HeadDim, "dkdv"), Grid: grid, Block: gpu.Dim3{X: 64, Y: 1, Z: 1},
				Params: cudakit.TensorParams(c, gpu.Int32(int32(s.SeqQ))),
				Then: []cudakit.Launch{{Function: cudakit.ModeKernelName(sdk.Backward, s.DType, 0, "dq"), Grid: grid, Block: gpu.Dim3{X: 128, Y: 1, Z: 1},
					Params: cudakit.TensorParams(c)}},
			}, nil
		}},
	}
	source := []byte("FWD_KERNEL(attn_fwd_fp16_d64, half)\nFWD_KERNEL(attn_fwd_fp16_d128, half)\n" +
		"BWD_DKDV_KERNEL(attn_bwd_fp16_d64_dkdv, half)\nBWD_DKDV_KERNEL(attn_bwd_fp16_d128_dkdv, half)\nBWD_DQ_KERNEL(attn_bwd_fp16_d0_dq, half)\n")
	CheckPlans(t, spec, source)
	if planned == 0 {
		t.Error("CheckPlans planned no backward case")
	}
}

func TestInstantiatedModeKernels(t *testing.T) {
	source := []byte("WMMA_KERNEL(attn_fwd_fp16_d64_warps4_n32, half, 64, 4, 32)\n" +
		"WMMA_DKDV_KERNEL(attn_bwd_fp16_d64_dkdv_k64_q32, half, 64, 64, 32)\n" +
		"WMMA_DQ_KERNEL(attn_bwd_bf16_d128_dq_q64_k32, __nv_bfloat16, 128, 64, 32)\n" +
		"FUSED_KERNEL(attn_fwdbwd_fp16_d64, half)\n")
	tests := []struct {
		mode sdk.Mode
		want []string
	}{
		{sdk.Backward, []string{"attn_bwd_fp16_d64_dkdv_k64_q32", "attn_bwd_bf16_d128_dq_q64_k32"}},
		{sdk.ForwardBackward, []string{"attn_fwdbwd_fp16_d64"}},
		{sdk.Forward, []string{"attn_fwd_fp16_d64_warps4_n32"}},
	}
	for _, tc := range tests {
		if got := InstantiatedModeKernels(source, tc.mode); !slices.Equal(got, tc.want) {
			t.Errorf("InstantiatedModeKernels(%s) = %v, want %v", tc.mode, got, tc.want)
		}
	}
}

// ModeCases are the conformance shapes in the mode asked for, inside the
// capabilities: none of a mode the variant does not declare.
func TestModeCases(t *testing.T) {
	caps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, HeadDims: []int{64}, Causal: true, NonCausal: true,
		GroupedQueryHeads: true, UnequalSeqLens: true, Modes: []sdk.Mode{sdk.Forward, sdk.Backward}}
	v := sdk.Variant{Name: "v", Capabilities: caps}
	forward := conformance.Cases(v)
	backward := ModeCases(v, sdk.Backward)
	if len(backward) == 0 || len(backward) > len(forward) {
		t.Fatalf("%d backward cases for %d forward ones", len(backward), len(forward))
	}
	for _, c := range backward {
		if s := attention.ShapeOf(c); s.Mode != sdk.Backward || caps.Unsupported(s) != "" || !strings.HasSuffix(c.ID, "-bwd") {
			t.Errorf("case %s: shape %s", c.ID, s)
		}
	}
	if got := ModeCases(v, sdk.ForwardBackward); len(got) != 0 {
		t.Errorf("%d fwd+bwd cases of a variant that does not declare the mode", len(got))
	}
}
