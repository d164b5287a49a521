package cudafile

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/decode"
	"github.com/flashcore/bench/ops/varlen"
	"github.com/flashcore/bench/sdk"
)

// decodeExample is the spec of examples/cuda/decode, a [decode] table alone.
const decodeExample = "../../examples/cuda/decode/paged_decode.toml"

// opCase is a case of the op with params p, its derived axes filled in
// as the suite decoder fills them.
func opCase(t *testing.T, name string, p op.Params) cudakit.OpCase {
	t.Helper()
	o, err := ops.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range o.Spec().Axes {
		if _, ok := p[a.Name]; !ok && a.Default != "" {
			p[a.Name] = a.Default
		}
	}
	return cudakit.OpCase{Op: name, Params: ops.Complete(o, p)}
}

func tensorNames(s op.Spec) []string {
	var out []string
	for _, t := range slices.Concat(s.Inputs, s.Outputs) {
		out = append(out, t.Name)
	}
	return out
}

// The decode example: the variant runs decode alone, with the table's
// capabilities, and a case plans to one launch whose params are decode's
// tensors, axes and floats in the spec's order.
func TestDecodeExampleSpec(t *testing.T) {
	spec, err := Load(decodeExample)
	if err != nil {
		t.Fatal(err)
	}
	if spec.RunsAttention() || len(spec.Ops) != 1 || spec.Ops[0].Op != decode.Name {
		t.Fatalf("ops %+v, attention %v", spec.Ops, spec.RunsAttention())
	}
	v := spec.Variant("paged")
	if !slices.Equal(v.Ops, []string{decode.Name}) {
		t.Errorf("variant ops %v, want decode alone", v.Ops)
	}
	c := v.CapabilitiesOf(decode.Name)
	if !slices.Equal(c.DTypes, []sdk.DType{sdk.FP16}) || !slices.Equal(c.HeadDims, []int{64, 128}) || !c.Causal || !c.NonCausal ||
		!c.GroupedQueryHeads || !c.NeedsGPU || !c.Applies(sdk.MaskWindow) || !c.Applies(sdk.MaskSoftcap) {
		t.Errorf("decode capabilities %+v", c)
	}
	oc := opCase(t, decode.Name, op.Params{"batch": "3", "heads": "8", "kv_heads": "2", "q_len": "4", "head_dim": "128",
		"page_size": "16", "context_len": "1000", "window_left": "100", "softcap": "30"})
	plans := spec.OpPlans()
	l, err := plans[decode.Name](oc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.ValidateWith(tensorNames(decode.Spec)); err != nil {
		t.Fatal(err)
	}
	if l.Function != "paged_decode_d128" || l.Grid != (gpu.Dim3{X: 3 * 4 * 8 / 4, Y: 1, Z: 1}) || l.Block != (gpu.Dim3{X: 128, Y: 1, Z: 1}) || len(l.Then) != 0 {
		t.Errorf("launch %s %+v %+v", l.Function, l.Grid, l.Block)
	}
	i32 := func(n int32) cudakit.Param { return cudakit.ValueParam(gpu.Int32(n)) }
	want := []cudakit.Param{
		cudakit.BufferParam("q"), cudakit.BufferParam("k_cache"), cudakit.BufferParam("v_cache"),
		cudakit.BufferParam("block_table"), cudakit.BufferParam("cache_seqlens"), cudakit.BufferParam("o"),
		i32(3), i32(4), i32(8), i32(2), i32(16), i32(63), // batch, q_len, heads, kv_heads, page_size, max_pages = ceil(1000/16)
		cudakit.ValueParam(gpu.Float32(float32(1 / math.Sqrt(128)))), i32(1), i32(100), cudakit.ValueParam(gpu.Float32(30)),
	}
	if !slices.Equal(l.Params, want) {
		t.Errorf("params\n%+v\nwant\n%+v", l.Params, want)
	}
	// Non-causal, no window, no softcap: causal 0, window_left -1, softcap 0.
	oc = opCase(t, decode.Name, op.Params{"batch": "1", "heads": "4", "head_dim": "64", "context_len": "64", "causal": "false"})
	l, err = plans[decode.Name](oc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "paged_decode_d64" || l.Grid.X != 1 || l.Params[13] != i32(0) || l.Params[14] != i32(-1) || l.Params[15] != cudakit.ValueParam(gpu.Float32(0)) {
		t.Errorf("non-causal launch %s %+v %+v", l.Function, l.Grid, l.Params[12:])
	}
}

// A spec with attention's kernels and a [varlen] table: the variant runs
// both, attention with the top-level capabilities; a varlen case's
// formulas read its derived axes (total_q, offsets) and the tunables, and
// the op's own scratch.
func TestVarlenOpTable(t *testing.T) {
	doc := `source = "splitkv.cu"
[capabilities]
dtypes = ["fp16", "bf16"]
head_dims = [64]

[[tunables]]
name = "ROWS"
values = ["4", "8"]

[[kernels]]
entry = "attn_{dtype}_d{D}"
grid = ["B*H"]
block = [128]
params = ["q", "k", "v", "o", "scale"]

[varlen]
[varlen.capabilities]
dtypes = ["bf16"]
head_dims = [128]
causal = true
non_causal = false
masks = ["window"]

[[varlen.scratch]]
name = "rows_done"
bytes = "4 * offsets"
zero = true

[[varlen.kernels]]
entry = "varlen_{T}_d{head_dim}_c{causal}"
grid = ["cdiv(total_q, ROWS)", "heads"]
block = ["32 * ROWS"]
shared_bytes = "2 * ROWS * head_dim * elem"
params = ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "o", "rows_done", "batch", "total_k:i64", "heads / kv_heads",
          "window_left", "window_right", "scale_log2e:f64", "causal"]
`
	spec, err := Parse("../../examples/cuda/varlen.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Variant("mixed")
	if !slices.Equal(v.Ops, []string{"attention", varlen.Name}) || len(v.Capabilities.DTypes) != 2 {
		t.Errorf("variant ops %v, capabilities %+v", v.Ops, v.Capabilities)
	}
	if c := v.CapabilitiesOf(varlen.Name); !slices.Equal(c.DTypes, []sdk.DType{sdk.BF16}) || c.NonCausal || !c.Applies(sdk.MaskWindow) || c.Applies(sdk.MaskSoftcap) {
		t.Errorf("varlen capabilities %+v", c)
	}
	oc := opCase(t, varlen.Name, op.Params{"batch": "5", "heads": "8", "kv_heads": "2", "seq_q": "300", "seq_k": "400",
		"head_dim": "128", "dtype": "bf16", "window_left": "64"})
	totalQ, _ := varlen.Lengths(varlen.ShapeOf(oc.Params))
	sumQ := 0
	for _, n := range totalQ {
		sumQ += n
	}
	if got := oc.Params.Int("total_q"); got != sumQ {
		t.Fatalf("total_q %d, want %d", got, sumQ)
	}
	l, err := spec.OpPlans()[varlen.Name](oc, map[string]string{"ROWS": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.ValidateWith(tensorNames(varlen.Spec)); err != nil {
		t.Fatal(err)
	}
	if l.Function != "varlen___nv_bfloat16_d128_ctrue" || l.Grid != (gpu.Dim3{X: (sumQ + 7) / 8, Y: 8, Z: 1}) || l.Block != (gpu.Dim3{X: 256, Y: 1, Z: 1}) ||
		l.DynamicSharedBytes != 2*8*128*2 {
		t.Errorf("launch %s %+v %+v %d", l.Function, l.Grid, l.Block, l.DynamicSharedBytes)
	}
	if want := []cudakit.Scratch{{Name: "rows_done", Bytes: 4 * 6, Reset: true}}; !slices.Equal(l.Scratch, want) {
		t.Errorf("scratch %+v, want %+v", l.Scratch, want)
	}
	scale := 1 / math.Sqrt(128)
	want := []cudakit.Param{
		cudakit.BufferParam("q"), cudakit.BufferParam("k"), cudakit.BufferParam("v"), cudakit.BufferParam("cu_seqlens_q"),
		cudakit.BufferParam("cu_seqlens_k"), cudakit.BufferParam("o"), cudakit.BufferParam("rows_done"),
		cudakit.ValueParam(gpu.Int32(5)), cudakit.ValueParam(gpu.Int64(int64(oc.Params.Int("total_k")))), cudakit.ValueParam(gpu.Int32(4)),
		cudakit.ValueParam(gpu.Int32(64)), cudakit.ValueParam(gpu.Int32(-1)), cudakit.ValueParam(gpu.Float64(scale * math.Log2E)),
		cudakit.ValueParam(gpu.Int32(1)),
	}
	if !slices.Equal(l.Params, want) {
		t.Errorf("params\n%+v\nwant\n%+v", l.Params, want)
	}
	// Attention's forward is planned as before.
	fwd, err := spec.Plan(sdk.Shape{Batch: 2, Heads: 4, KVHeads: 4, SeqQ: 64, SeqK: 64, HeadDim: 64, DType: sdk.FP16}, nil)
	if err != nil || fwd.Function != "attn_fp16_d64" || fwd.Grid.X != 8 {
		t.Errorf("attention plan %s %+v, %v", fwd.Function, fwd.Grid, err)
	}
}

// A formula that does not evaluate for an op's case is an invalid plan
// that names the spec and the table.
func TestOpPlanErrorsAreInvalidPlans(t *testing.T) {
	doc := `source = "splitkv.cu"
[decode]
capabilities = { dtypes = ["fp16"] }
[[decode.kernels]]
entry = "d"
grid = ["batch / 3"]
block = [32]
params = ["q"]
`
	spec, err := Parse("../../examples/cuda/bad.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	oc := opCase(t, decode.Name, op.Params{"batch": "4", "heads": "1", "head_dim": "64", "context_len": "64"})
	_, err = spec.OpPlans()[decode.Name](oc, nil)
	if !errors.Is(err, cudakit.ErrInvalidPlan) || !strings.Contains(err.Error(), `bad.toml: [decode]: kernel 1 (d): grid: "batch / 3" is 4/3, not a whole number`) {
		t.Errorf("plan: %v", err)
	}
}

// Every problem of an op table is reported with the file, the line and the
// key: an op that does not exist, attention as a table, keys, params,
// formulas, entries and masks the op does not have, and a tunable that
// takes an axis's name.
func TestOpTableErrors(t *testing.T) {
	doc := `source = "splitkv.cu"

[[tunables]]
name = "page_size"
values = ["16"]

[decoder]
capabilities = { dtypes = ["fp16"] }

[attention]
capabilities = { dtypes = ["fp16"] }

[decode]
colour = "red"
capabilities = { dtypes = ["fp8"], masks = ["window", "alibi"] }

[[decode.kernels]]
entry = "d_{D}"
grid = ["B * H"]
block = ["cdiv(heads,"]
params = ["q", "k", "block_table", "softcapp", "scale:i32"]

[[decode.kernels]]
entry = "d<{head_dim}>"
grid = [1]
block = [32]
params = ["o"]

[rmsnorm]
capabilities = { dtypes = ["fp16"], masks = ["softcap"] }
[[rmsnorm.kernels]]
entry = "n"
grid = ["rows"]
block = [32]
params = ["x", "scale"]
`
	_, err := Parse("testdata/ops.toml", []byte(doc))
	if err == nil {
		t.Fatal("no error")
	}
	got := err.Error()
	for _, want := range []string{
		`testdata/ops.toml:4: key "tunables.name": "page_size" is taken: decode has an axis or tensor of that name`,
		`testdata/ops.toml:7: key "decoder": unknown key: not a spec key, nor an op whose table this could be (decode, rmsnorm, varlen)`,
		`testdata/ops.toml:10: key "attention": attention's kernels are the top-level`,
		`testdata/ops.toml:14: key "decode.colour": unknown key`,
		`testdata/ops.toml:15: key "decode.capabilities.dtypes": "fp8" is not a dtype`,
		`testdata/ops.toml:15: key "decode.capabilities.masks": "alibi" is not a mask (window, softcap)`,
		`testdata/ops.toml:18: key "decode.kernels.entry": {D} is not an axis of decode`,
		`testdata/ops.toml:19: key "decode.kernels.grid": "B * H": unknown name B, H`,
		`testdata/ops.toml:20: key "decode.kernels.block": "cdiv(heads,": ends too early`,
		`testdata/ops.toml:21: key "decode.kernels.params": param "k": unknown name k (a param is q, k_cache, v_cache, block_table, cache_seqlens, o, a scratch buffer, softcap, scale, scale_log2e, or an integer formula)`,
		`testdata/ops.toml:21: key "decode.kernels.params": param "softcapp": unknown name softcapp`,
		`testdata/ops.toml:21: key "decode.kernels.params": param "scale:i32": scale is a float`,
		`testdata/ops.toml:24: key "decode.kernels.entry": template entries are for attention's kernels`,
		`testdata/ops.toml:30: key "rmsnorm.capabilities.masks": rmsnorm has no softcap: it takes no softcap mask`,
		`testdata/ops.toml:35: key "rmsnorm.kernels.params": param "scale": unknown name scale`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Logf("errors:\n%s", got)
	}
	if strings.Contains(got, `"block_table"`) {
		t.Errorf("block_table is a tensor of decode:\n%s", got)
	}
}

// Attention's capabilities take no masks, and a spec of op tables alone
// has no [capabilities] of its own.
func TestCapabilitiesOutsideOpTables(t *testing.T) {
	withAttention := `source = "splitkv.cu"
[capabilities]
dtypes = ["fp16"]
masks = ["window"]
[[kernels]]
entry = "k"
grid = [1]
block = [32]
params = ["q"]
`
	_, err := Parse("../../examples/cuda/bad.toml", []byte(withAttention))
	if err == nil || !strings.Contains(err.Error(), `bad.toml:4: key "capabilities.masks": masks are for an op table's capabilities`) {
		t.Errorf("masks of attention: %v", err)
	}
	opsAlone := `source = "splitkv.cu"
[capabilities]
dtypes = ["fp16"]
[decode]
capabilities = { dtypes = ["fp16"] }
[[decode.kernels]]
entry = "d"
grid = [1]
block = [32]
params = ["q"]
`
	_, err = Parse("../../examples/cuda/bad.toml", []byte(opsAlone))
	if err == nil || !strings.Contains(err.Error(), `key "capabilities": [capabilities] are attention's, and the spec has no [[kernels]]`) {
		t.Errorf("capabilities without kernels: %v", err)
	}
}

// The decode example compiles for the device's architecture, and its
// cubin holds the entries its spec names for every head dim.
func TestCompileTheDecodeExample(t *testing.T) {
	nvcc := nvccOrSkip(t)
	spec, err := Load(decodeExample)
	if err != nil {
		t.Fatal(err)
	}
	img, err := (&Compiler{NVCC: nvcc, CacheDir: t.TempDir()}).Image(spec, h100, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, symbol := range []string{"paged_decode_d64", "paged_decode_d128"} {
		if !strings.Contains(string(img.Data), symbol) {
			t.Errorf("the cubin has no symbol %s", symbol)
		}
	}
}
