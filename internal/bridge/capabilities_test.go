package bridge

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

// checked is a worker's description as the bridge checks requests
// against it: variants of each kind of limit, on a CPU.
var checked = sdk.Description{
	Device: sdk.Device{Kind: "cpu"},
	Variants: []sdk.Variant{
		{Name: "math", Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP32, sdk.FP16}, Causal: true, NonCausal: true,
			GroupedQueryHeads: true, UnequalSeqLens: true}},
		{Name: "narrow", Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, HeadDims: []int{64, 128}, Causal: true,
			MaxSeqLen: 256, SeqMultiple: 16}},
		{Name: "gpu", Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, Causal: true, NonCausal: true, NeedsGPU: true}},
		{Name: "norm", Ops: []string{rmsnorm.Name}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP32, sdk.FP16}, MaxElements: 1 << 20}},
		{Name: "both", Ops: []string{attention.Name, rmsnorm.Name}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.BF16},
			Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true}},
		{Name: "pair", Ops: []string{"pair"}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}}},
		{Name: "tiled", Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, Causal: true, NonCausal: true},
			Tunables: []sdk.Tunable{{Name: "tile", Values: []string{"32", "64"}, Default: "32"}}},
		{Name: "per-op", Ops: []string{attention.Name, rmsnorm.Name}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16},
			Causal: true, NonCausal: true, NeedsGPU: true},
			OpCapabilities: map[string]sdk.Capabilities{rmsnorm.Name: {DTypes: []sdk.DType{sdk.FP32}}}},
		{Name: "both-tiled", Ops: []string{attention.Name, rmsnorm.Name}, Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16},
			Causal: true, NonCausal: true},
			Tunables: []sdk.Tunable{{Name: "tile", Values: []string{"32", "64"}, Default: "32", Ops: []string{attention.Name}}}},
	},
}

func attentionRequest(variant string, s sdk.Shape) sdk.PrepareRequest {
	return sdk.PrepareRequest{CaseID: "c", Variant: variant, Shape: s}
}

func rmsnormRequest(variant string, rows, cols int, dtype sdk.DType) sdk.PrepareRequest {
	p := op.Params{"rows": strconv.Itoa(rows), "cols": strconv.Itoa(cols), "dtype": string(dtype)}
	c := op.Case{ID: "c", Op: rmsnorm.Name, Params: p}
	return ops.PrepareRequest(c, variant, nil, nil, nil, "")
}

// tuned is an attention request of variant with tunables, in fp16 unless
// a dtype is given.
func tuned(variant string, tunables map[string]string, dtype ...sdk.DType) sdk.PrepareRequest {
	req := attentionRequest(variant, shape(2, 2, 8, 8, 16, false, append(dtype, sdk.FP16)[0]))
	req.Tunables = tunables
	return req
}

func withTunables(req sdk.PrepareRequest, tunables map[string]string) sdk.PrepareRequest {
	req.Tunables = tunables
	return req
}

func shape(heads, kvHeads, seqQ, seqK, headDim int, causal bool, dtype sdk.DType) sdk.Shape {
	return sdk.Shape{Batch: 1, Heads: heads, KVHeads: kvHeads, SeqQ: seqQ, SeqK: seqK, HeadDim: headDim, Causal: causal, DType: dtype}
}

// TestUnsupported: the bridge refuses what the host's check refuses, in
// its words; the device check and the list of supported dtypes are its
// own additions.
func TestUnsupported(t *testing.T) {
	tests := []struct {
		name string
		req  sdk.PrepareRequest
		want string
	}{
		{"fits", attentionRequest("math", shape(4, 2, 13, 21, 16, true, sdk.FP32)), ""},
		{"unknown variant: the worker's to answer", attentionRequest("nonesuch", shape(1, 1, 8, 8, 16, false, sdk.BF16)), ""},
		{"dtype", attentionRequest("math", shape(2, 2, 8, 8, 16, false, sdk.BF16)), "dtype bf16 not supported (supports fp32, fp16)"},
		{"head dim", attentionRequest("narrow", shape(2, 2, 64, 64, 96, true, sdk.FP16)), "head dim 96 not supported (supported: [64 128])"},
		{"masking", attentionRequest("narrow", shape(2, 2, 64, 64, 64, false, sdk.FP16)), "non-causal attention not supported"},
		{"grouped heads", attentionRequest("narrow", shape(4, 2, 64, 64, 64, true, sdk.FP16)), "grouped-query heads not supported"},
		{"sequence length", attentionRequest("narrow", shape(2, 2, 272, 272, 64, true, sdk.FP16)), "sequence length 272 over the backend's limit of 256"},
		{"sequence multiple", attentionRequest("narrow", shape(2, 2, 40, 40, 64, true, sdk.FP16)), "sequence lengths 40x40 are not multiples of 16"},
		{"dimension below 1", attentionRequest("math", shape(2, 0, 8, 8, 16, true, sdk.FP16)), "shape B1 H2/0 S8 D16 fp16 causal has a dimension below 1"},
		{"needs a GPU", attentionRequest("gpu", shape(2, 2, 8, 8, 16, false, sdk.FP16)), "needs a CUDA GPU; this machine has none"},
		{"rmsnorm fits", rmsnormRequest("norm", 8, 4096, sdk.FP16), ""},
		{"rmsnorm dtype", rmsnormRequest("norm", 8, 4096, sdk.BF16), "dtype bf16 not supported (supports fp32, fp16)"},
		{"rmsnorm size", rmsnormRequest("norm", 1024, 2048, sdk.FP32), "2097152 elements per tensor over the backend's limit of 1048576"},
		{"rmsnorm on an attention variant", rmsnormRequest("math", 8, 64, sdk.FP32), "op rmsnorm not supported"},
		{"attention on an rmsnorm variant", attentionRequest("norm", shape(2, 2, 8, 8, 16, false, sdk.FP32)), "op attention not supported"},
		{"attention on a variant of both", attentionRequest("both", shape(2, 1, 8, 9, 16, true, sdk.BF16)), ""},
		{"rmsnorm on a variant of both", rmsnormRequest("both", 3, 5, sdk.BF16), ""},
		{"per-op: attention by the variant's capabilities", attentionRequest("per-op", shape(2, 2, 8, 8, 16, false, sdk.FP16)), "needs a CUDA GPU; this machine has none"},
		{"per-op: rmsnorm by its own, on a CPU", rmsnormRequest("per-op", 8, 64, sdk.FP32), ""},
		{"per-op: rmsnorm's own dtypes", rmsnormRequest("per-op", 8, 64, sdk.FP16), "dtype fp16 not supported (supports fp32)"},
		{"declared tunables", tuned("tiled", map[string]string{"tile": "64"}), ""},
		{"a value not declared", tuned("tiled", map[string]string{"tile": "48"}), `tunable tile: "48" is not one of 32, 64`},
		{"a tunable not declared", tuned("tiled", map[string]string{"tile": "32", "stages": "2"}), `unknown tunable "stages" (this variant has: tile)`},
		{"a tunable on a variant of none", tuned("math", map[string]string{"block_m": "64"}), `unknown tunable "block_m" (this variant has: none)`},
		{"attention's tunable on attention", tuned("both-tiled", map[string]string{"tile": "64"}), ""},
		{"attention's tunable on rmsnorm", withTunables(rmsnormRequest("both-tiled", 3, 5, sdk.FP16), map[string]string{"tile": "64"}),
			"tunable tile does not apply to op rmsnorm (it applies to attention)"},
		{"rmsnorm without attention's tunable", rmsnormRequest("both-tiled", 3, 5, sdk.FP16), ""},
		{"the capability reason comes first", tuned("tiled", map[string]string{"tile": "48"}, sdk.FP32), "dtype fp32 not supported (supports fp16)"},
		{"an op this build does not know", sdk.PrepareRequest{Variant: "pair", Op: "pair"}, `unknown op "pair": want attention, decode, rmsnorm or varlen`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := unsupported(checked, tc.req); got != tc.want {
				t.Errorf("unsupported = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUnsupportedAgreesWithTheHost: for every request above but the
// device's, the bridge refuses exactly when the host would skip the row.
func TestUnsupportedAgreesWithTheHost(t *testing.T) {
	requests := []sdk.PrepareRequest{
		attentionRequest("math", shape(4, 2, 13, 21, 16, true, sdk.FP32)),
		attentionRequest("math", shape(2, 2, 8, 8, 16, false, sdk.BF16)),
		attentionRequest("narrow", shape(2, 2, 64, 64, 96, true, sdk.FP16)),
		attentionRequest("narrow", shape(2, 2, 64, 64, 64, true, sdk.FP16)),
		attentionRequest("narrow", shape(2, 2, 272, 272, 64, true, sdk.FP16)),
		attentionRequest("narrow", shape(2, 2, 40, 40, 64, true, sdk.FP16)),
		attentionRequest("norm", shape(2, 2, 8, 8, 16, false, sdk.FP32)),
		rmsnormRequest("norm", 8, 4096, sdk.FP16),
		rmsnormRequest("norm", 1024, 2048, sdk.FP32),
		rmsnormRequest("math", 8, 64, sdk.FP32),
		rmsnormRequest("both", 3, 5, sdk.BF16),
	}
	for _, req := range requests {
		v := checked.Variants[variantIndex(checked.Variants, req.Variant)]
		host := ops.Unsupported(v, requestCase(req))
		if bridge := unsupported(checked, req); (bridge == "") != (host == "") {
			t.Errorf("%s %s %v: the bridge says %q, the host %q", req.Variant, req.Op, req.Shape, bridge, host)
		}
	}
}

// TestWorkersEpsIsTheOps: the worker passes rmsnorm's eps to backends
// itself (the host sends none), so it must be the op's.
func TestWorkersEpsIsTheOps(t *testing.T) {
	source, err := os.ReadFile("python/flashcore_worker.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RMSNORM_EPS = (\S+)$`).FindSubmatch(source)
	if m == nil {
		t.Fatal("flashcore_worker.py defines no RMSNORM_EPS")
	}
	if eps, err := strconv.ParseFloat(string(m[1]), 64); err != nil || eps != rmsnorm.Eps {
		t.Errorf("RMSNORM_EPS = %s, want ops/rmsnorm.Eps = %g", m[1], rmsnorm.Eps)
	}
}
