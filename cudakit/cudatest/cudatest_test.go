package cudatest

import (
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
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
