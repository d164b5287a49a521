package cudafile

import (
	"testing"

	"github.com/flashcore/bench/sdk"
)

const templated = "../../examples/cuda/templated_causal.toml"

// Every placeholder renders as the table says, in a symbol and in a
// template-id alike.
func TestRender(t *testing.T) {
	shape := sdk.Shape{Batch: 2, Heads: 8, KVHeads: 2, SeqQ: 77, SeqK: 131, HeadDim: 128, Causal: true, DType: sdk.BF16}
	vars, err := shapeVars(shape, map[string]string{"SPLITS": "4"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ entry, want string }{
		{"attn_{dtype}_d{D}", "attn_bf16_d128"},
		{"attn<{T}, {D}, {causal}>", "attn<__nv_bfloat16, 128, true>"},
		{"k<{kv_heads}, {H_kv}, {group}, {heads}, {batch}>", "k<2, 2, 4, 8, 2>"},
		{"s_{seq_q}_{Sk}_{SPLITS}", "s_77_131_4"},
		{"plain", "plain"},
	} {
		if got := render(tc.entry, shape, vars); got != tc.want {
			t.Errorf("render(%q) = %q, want %q", tc.entry, got, tc.want)
		}
	}
	shape.Causal, shape.DType = false, sdk.FP16
	vars, _ = shapeVars(shape, nil)
	if got := render("attn<{T}, {causal}>", shape, vars); got != "attn<half, false>" {
		t.Errorf("non-causal fp16: %q", got)
	}
}

// A template entry is instantiated for each dtype, head dim and masking
// the example declares, and each instance is found in the cubin under its
// mangled name.
func TestTemplateInstancesAreCompiledAndFound(t *testing.T) {
	nvcc := nvccOrSkip(t)
	spec, err := Load(templated)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := spec.instances(nil)
	if err != nil || len(ids) != 8 {
		t.Fatalf("instances %v, %v: want 2 dtypes x 2 head dims x 2 maskings", ids, err)
	}
	c := &Compiler{NVCC: nvcc, CacheDir: t.TempDir()}
	img, err := c.Image(spec, h100, nil)
	if err != nil {
		t.Fatal(err)
	}
	shape := sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 33, SeqK: 65, HeadDim: 64, Causal: true, DType: sdk.FP16}
	plan, err := spec.Plan(shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Function != "attn_fwd<half, 64, true>" {
		t.Errorf("the plan launches %q", plan.Function)
	}
	want := map[string]string{
		"attn_fwd<half, 64, true>":            "_Z8attn_fwdI6__halfLi64ELb1EEvPKT_S3_S3_PS1_iiiif",
		"attn_fwd<__nv_bfloat16, 128, false>": "_Z8attn_fwdI13__nv_bfloat16Li128ELb0EEvPKT_S3_S3_PS1_iiiif",
	}
	for id, symbol := range want {
		if got := img.Symbol(id); got != symbol {
			t.Errorf("symbol of %s = %q, want %q", id, got, symbol)
		}
	}
	if len(img.Symbols) != len(ids) {
		t.Errorf("symbols %v, want one for each of %v", img.Symbols, ids)
	}
	again, err := c.Image(spec, h100, nil)
	if err != nil || again.Facts["kernel_cache_hit"] != "true" || again.Symbol("attn_fwd<half, 64, true>") != want["attn_fwd<half, 64, true>"] {
		t.Errorf("from the cache: %v, symbols %v", err, again.Symbols)
	}
}
