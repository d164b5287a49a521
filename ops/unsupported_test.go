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

// TestAttentionMasks: a masked attention case is held to the masks its
// variant lists, bottom-right only where it moves the mask; Complete
// drops mask axes at their defaults; the backward modes refuse masks.
func TestAttentionMasks(t *testing.T) {
	o, _ := Lookup(attention.Name)
	plain := sdk.Variant{Name: "plain", Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, Causal: true, NonCausal: true, UnequalSeqLens: true}}
	masked := plain
	masked.Name = "masked"
	masked.Capabilities.Masks = []string{sdk.MaskBottomRight, sdk.MaskWindow, sdk.MaskSoftcap}
	attentionCase := func(seqK int, axes ...string) op.Case {
		p := attention.ParamsOf(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 16, SeqK: seqK, HeadDim: 64, Causal: true, DType: sdk.FP16})
		for i := 0; i+1 < len(axes); i += 2 {
			p[axes[i]] = axes[i+1]
		}
		p = Complete(o, p)
		return op.Case{ID: o.CaseID(p, op.Normal), Op: attention.Name, Params: p}
	}
	for _, tc := range []struct {
		name          string
		c             op.Case
		plain, masked string
	}{
		{"defaults written out", attentionCase(64, "causal_align", "top-left", "window_left", "-1", "window_right", "-1", "softcap", "0"), "", ""},
		{"bottom-right, Sq = Sk", attentionCase(16, "causal_align", "bottom-right"), "", ""},
		{"bottom-right, Sq < Sk", attentionCase(64, "causal_align", "bottom-right"), "bottom-right mask alignment (seq_q != seq_k) not supported", ""},
		{"window", attentionCase(64, "window_left", "8"), "sliding window not supported", ""},
		{"softcap", attentionCase(64, "softcap", "30"), "soft-capping not supported", ""},
	} {
		if got := Unsupported(plain, tc.c); got != tc.plain {
			t.Errorf("%s: plain variant %q, want %q", tc.name, got, tc.plain)
		}
		if got := Unsupported(masked, tc.c); got != tc.masked {
			t.Errorf("%s: masked variant %q, want %q", tc.name, got, tc.masked)
		}
	}
	if c := attentionCase(64, "causal_align", "top-left", "softcap", "0"); len(c.Params) != 9 || c.ID != "b1-h2-s16-sk64-d64-fp16-causal" {
		t.Errorf("defaults written out: params %v, ID %s; want the nine axes dense attention always had", c.Params, c.ID)
	}
	p := attention.ParamsOf(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 16, SeqK: 16, HeadDim: 64, Causal: true, DType: sdk.FP16, Mode: sdk.Backward})
	p["softcap"] = "30"
	if key, problem := o.Validate(p); key != "softcap" || problem == "" {
		t.Errorf("softcap in mode bwd: %q %q, want refused at softcap", key, problem)
	}
}
