package ops

import (
	"strconv"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

// TestUnsupportedReadsEachOpsCapabilities: a case is held to the
// capabilities its op declares, so a variant with fp32 for rmsnorm alone
// runs rmsnorm in fp32 and skips attention in fp32, with the reason; a
// variant without per-op capabilities holds every op to its Capabilities.
func TestUnsupportedReadsEachOpsCapabilities(t *testing.T) {
	half := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, Causal: true, NonCausal: true}
	perOp := sdk.Variant{Name: "per-op", Ops: []string{attention.Name, rmsnorm.Name}, Capabilities: half,
		OpCapabilities: map[string]sdk.Capabilities{rmsnorm.Name: {DTypes: []sdk.DType{sdk.FP32}, MaxElements: 1 << 20}}}
	shared := sdk.Variant{Name: "shared", Ops: []string{attention.Name, rmsnorm.Name}, Capabilities: half}
	attentionCase := func(dtype sdk.DType) op.Case {
		return attention.NewCase(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 16, SeqK: 16, HeadDim: 64, DType: dtype}, op.Normal)
	}
	normCase := func(rows int, dtype sdk.DType) op.Case {
		p := op.Params{"rows": strconv.Itoa(rows), "cols": "1024", "dtype": string(dtype)}
		return op.Case{ID: rmsnorm.Op{}.CaseID(p, op.Normal), Op: rmsnorm.Name, Params: p}
	}
	tests := []struct {
		name    string
		variant sdk.Variant
		c       op.Case
		want    string
	}{
		{"rmsnorm fp32 by its own capabilities", perOp, normCase(8, sdk.FP32), ""},
		{"rmsnorm fp16 outside its own", perOp, normCase(8, sdk.FP16), "dtype fp16 not supported"},
		{"rmsnorm over its own size limit", perOp, normCase(2048, sdk.FP32), "2097152 elements per tensor over the backend's limit of 1048576"},
		{"attention fp16 by the variant's", perOp, attentionCase(sdk.FP16), ""},
		{"attention fp32 skipped", perOp, attentionCase(sdk.FP32), "dtype fp32 not supported"},
		{"no per-op capabilities: rmsnorm by the variant's", shared, normCase(8, sdk.BF16), ""},
		{"no per-op capabilities: rmsnorm fp32 skipped", shared, normCase(8, sdk.FP32), "dtype fp32 not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unsupported(tc.variant, tc.c); got != tc.want {
				t.Errorf("Unsupported = %q, want %q", got, tc.want)
			}
		})
	}
}
