package cudahopper

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// decodeShape is one decode case as the tests write it.
type decodeShape struct {
	batch, qLen, heads, kvHeads, dim int
	pageSize, contextLen             int
	dtype                            sdk.DType
	causal                           bool
	window                           int     // -1: none
	softcap                          float64 // 0: none
	dist                             string  // context_dist
}

func (s decodeShape) maxPages() int { return (s.contextLen + s.pageSize - 1) / s.pageSize }

// numPages is the pool: every sequence's pages, and some spare to poison.
func (s decodeShape) numPages() int { return s.batch*s.maxPages() + 7 }

// params are the case's params as the contract sends them: text.
func (s decodeShape) params() op.Params {
	return op.Params{
		"batch": strconv.Itoa(s.batch), "heads": strconv.Itoa(s.heads), "kv_heads": strconv.Itoa(s.kvHeads),
		"q_len": strconv.Itoa(s.qLen), "head_dim": strconv.Itoa(s.dim), "page_size": strconv.Itoa(s.pageSize),
		"context_len": strconv.Itoa(s.contextLen), "context_dist": s.dist, "dtype": string(s.dtype),
		"causal": strconv.FormatBool(s.causal), "window_left": strconv.Itoa(s.window),
		"softcap":   strconv.FormatFloat(s.softcap, 'g', -1, 64),
		"max_pages": strconv.Itoa(s.maxPages()), "num_pages": strconv.Itoa(s.numPages()),
	}
}

// files are the case's tensors in the op's order, in dir.
func (s decodeShape) files(dir string) (inputs, outputs []sdk.TensorFile) {
	file := func(name string, dtype sdk.DType, dims ...int) sdk.TensorFile {
		return sdk.TensorFile{Name: name, Path: dir + "/" + name + ".bin", DType: dtype, Dims: dims}
	}
	inputs = []sdk.TensorFile{
		file(decodeQ, s.dtype, s.batch, s.qLen, s.heads, s.dim),
		file(decodeKCache, s.dtype, s.numPages(), s.pageSize, s.kvHeads, s.dim),
		file(decodeVCache, s.dtype, s.numPages(), s.pageSize, s.kvHeads, s.dim),
		file(decodeBlockTable, int32DType, s.batch, s.maxPages()),
		file(decodeCacheSeqlens, int32DType, s.batch),
	}
	return inputs, []sdk.TensorFile{file(decodeO, s.dtype, s.batch, s.qLen, s.heads, s.dim)}
}

func (s decodeShape) opCase() cudakit.OpCase {
	in, out := s.files("/in")
	return cudakit.OpCase{Op: decodeOp, Params: s.params(), Inputs: in, Outputs: out}
}

// llama is the decode step of a Llama-like model: 32 query heads over 8
// KV heads, D128, 8k keys.
var llama = decodeShape{batch: 32, qLen: 1, heads: 32, kvHeads: 8, dim: 128, pageSize: 16, contextLen: 8192,
	dtype: sdk.FP16, causal: true, window: -1, dist: "equal"}

func decodeDefaults() map[string]string {
	out := map[string]string{}
	for _, t := range decodeTunables {
		out[t.Name] = t.Default
	}
	return out
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// The heuristic on the shapes it is for: blocks that fill the SMs need no
// split, one sequence on 132 SMs splits until the waves are nearly full,
// short or windowed ranges split little, and unequal lengths split for
// balance.
func TestAutoSplits(t *testing.T) {
	tests := []struct {
		units, tiles, slots int
		balanced            bool
		want                int
	}{
		{256, 128, 264, true, 1},  // B32 × 8 KV heads: one wave of 264 slots
		{256, 8, 396, true, 1},    // dense B1 H8 S512: 256 blocks on the SMs, 8 tiles each
		{256, 8, 396, false, 1},   // ... whatever the lengths
		{256, 256, 396, true, 3},  // S512×16384: a long walk splits until the slots are nearly full
		{106, 16, 396, true, 1},   // 80% of 132 SMs, 16 tiles
		{105, 16, 396, true, 3},   // fewer blocks: split
		{106, 17, 396, true, 3},   // a longer walk: split
		{8, 128, 264, true, 29},   // B1: 232 of 264 slots, the first count within 85% of the best
		{8, 3, 264, true, 1},      // 3 tiles: no split of 2 tiles or more
		{8, 5, 264, true, 2},      // at most tiles / 2
		{256, 128, 264, false, 5}, // unequal lengths: four waves of blocks
		{64, 5, 396, false, 2},    // ... but no more than the tiles allow
		{1024, 512, 264, true, 1}, // many waves already
		{1024, 512, 264, false, 2},
	}
	for _, tc := range tests {
		if got := autoSplits(tc.units, tc.tiles, hopperSMs, tc.slots, tc.balanced); got != tc.want {
			t.Errorf("autoSplits(units %d, tiles %d, slots %d, balanced %v) = %d, want %d",
				tc.units, tc.tiles, tc.slots, tc.balanced, got, tc.want)
		}
	}
}

func TestDecodeSharedBytesAndOccupancy(t *testing.T) {
	tests := []struct {
		dim, tileN, stages, want, blocks int
	}{
		{128, 64, 3, 16*128*2 + 6*64*128*2, 2}, // the default at D128: 100 KiB, two blocks an SM
		{64, 64, 3, 16*64*2 + 6*64*64*2, 3},    // registers cap it at three
		{128, 128, 3, 16*128*2 + 6*128*128*2, 1},
		{128, 64, 2, 16*128*2 + 4*64*128*2, 3},
	}
	for _, tc := range tests {
		got := decodeSharedBytes(2, tc.dim, tc.tileN, tc.stages)
		if got != tc.want || decodeBlocksPerSM(got) != tc.blocks {
			t.Errorf("D%d n%d s%d: %d bytes, %d blocks an SM; want %d, %d", tc.dim, tc.tileN, tc.stages, got, decodeBlocksPerSM(got), tc.want, tc.blocks)
		}
		if got > hopperSharedPerBlock {
			t.Errorf("D%d n%d s%d needs %d bytes, over a block's %d", tc.dim, tc.tileN, tc.stages, got, hopperSharedPerBlock)
		}
	}
}

// planDecode's launches for a few shapes: the kernel, the grid (row blocks ×
// splits, KV heads, batch), the splits' keys, and the scratch and combine
// only where there are several splits.
func TestDecodePlanGeometry(t *testing.T) {
	long := llama
	long.batch = 1
	spec := decodeShape{batch: 4, qLen: 8, heads: 32, kvHeads: 4, dim: 64, pageSize: 32, contextLen: 2000,
		dtype: sdk.BF16, causal: true, window: 256, softcap: 50, dist: "long-tail"}
	tests := []struct {
		name      string
		shape     decodeShape
		tunables  map[string]string
		function  string
		grid      gpu.Dim3
		splitKeys int
		splits    int
	}{
		{"llama B32: a full wave, one split", llama, decodeDefaults(), "decode_fp16_d128_n64_s3", gpu.Dim3{X: 1, Y: 8, Z: 32}, 8192, 1},
		{"llama B1: 29 splits asked, 26 of 320 keys", long, decodeDefaults(), "decode_fp16_d128_n64_s3", gpu.Dim3{X: 26, Y: 8, Z: 1}, 320, 26},
		{"llama B32, 64 splits", llama, with(decodeDefaults(), numSplits, "64"), "decode_fp16_d128_n64_s3", gpu.Dim3{X: 64, Y: 8, Z: 32}, 128, 64},
		{"llama B32, 128-key tiles, 2 stages", llama, with(decodeDefaults(), decodeTileN, "128", decodeStages, "2"),
			"decode_fp16_d128_n128_s2", gpu.Dim3{X: 1, Y: 8, Z: 32}, 8192, 1},
		{"speculative GQA-8, window 256: 4 row blocks × 2 splits", spec, decodeDefaults(), "decode_bf16_d64_n64_s3",
			gpu.Dim3{X: 8, Y: 4, Z: 4}, 192, 2},
		{"speculative, 4 splits asked, 128-key tiles", spec, with(decodeDefaults(), numSplits, "4", decodeTileN, "128"),
			"decode_bf16_d64_n128_s3", gpu.Dim3{X: 12, Y: 4, Z: 4}, 128, 3},
		{"nil tunables are the defaults", llama, nil, "decode_fp16_d128_n64_s3", gpu.Dim3{X: 1, Y: 8, Z: 32}, 8192, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.shape.opCase()
			l, err := planDecode(c, tc.tunables)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.ValidateWith(append(names(c.Inputs), names(c.Outputs)...)); err != nil {
				t.Fatal(err)
			}
			wantShared := decodeSharedBytes(2, tc.shape.dim, atoi(t, or(tc.tunables[decodeTileN], "64")), atoi(t, or(tc.tunables[decodeStages], "3")))
			if l.Function != tc.function || l.Grid != tc.grid || l.Block != (gpu.Dim3{X: 128, Y: 1, Z: 1}) || l.DynamicSharedBytes != wantShared {
				t.Errorf("launch %s grid %+v block %+v shared %d; want %s grid %+v, 128 threads, %d bytes",
					l.Function, l.Grid, l.Block, l.DynamicSharedBytes, tc.function, tc.grid, wantShared)
			}
			if len(l.Params) != 18 {
				t.Fatalf("%d params, want 18", len(l.Params))
			}
			for i, want := range []string{"q", "k_cache", "v_cache", "block_table", "cache_seqlens", "o"} {
				if l.Params[i].Buffer != want {
					t.Errorf("param %d names %q, want %q", i, l.Params[i].Buffer, want)
				}
			}
			value := func(i int) int32 { return int32(uint32(l.Params[i].Value)) }
			s := tc.shape
			wantInts := []int32{int32(s.heads), int32(s.kvHeads), int32(s.qLen), int32(s.pageSize), int32(s.maxPages()),
				int32(tc.splitKeys), 1, int32(s.window)}
			for i, want := range wantInts {
				if got := value(8 + i); got != want {
					t.Errorf("param %d = %d, want %d", 8+i, got, want)
				}
			}
			scale := 1 / math.Sqrt(float64(s.dim))
			wantScale, wantCap := scale*math.Log2E, 0.0
			if s.softcap > 0 {
				wantScale, wantCap = scale/s.softcap, s.softcap*math.Log2E
			}
			if got := math.Float32frombits(uint32(l.Params[16].Value)); got != float32(wantScale) {
				t.Errorf("score scale %v, want %v", got, float32(wantScale))
			}
			if got := math.Float32frombits(uint32(l.Params[17].Value)); got != float32(wantCap) {
				t.Errorf("softcap·log2(e) %v, want %v", got, float32(wantCap))
			}
			rows := s.batch * s.qLen * s.heads
			if tc.splits == 1 {
				if len(l.Then) != 0 || len(l.Scratch) != 0 || l.Params[6].Buffer != "" || l.Params[6].Value != 0 || l.Params[7].Value != 0 {
					t.Errorf("one split: want O written directly, no scratch and no combine; got %+v", l)
				}
				return
			}
			wantScratch := []cudakit.Scratch{
				{Name: "o_part", Bytes: int64(rows * tc.splits * s.dim * 4)},
				{Name: "lse_part", Bytes: int64(rows * tc.splits * 4)},
			}
			if !slices.Equal(l.Scratch, wantScratch) || l.Params[6].Buffer != "o_part" || l.Params[7].Buffer != "lse_part" {
				t.Errorf("scratch %+v, params 6-7 %+v; want %+v", l.Scratch, l.Params[6:8], wantScratch)
			}
			if len(l.Then) != 1 {
				t.Fatalf("%d kernels after the split kernel, want the combine", len(l.Then))
			}
			combine := l.Then[0]
			wantCombine := "decode_" + string(s.dtype) + "_d" + strconv.Itoa(s.dim) + "_combine"
			if combine.Function != wantCombine || combine.Grid != (gpu.Dim3{X: (rows + 3) / 4, Y: 1, Z: 1}) || combine.Block.X != 128 ||
				len(combine.Params) != 5 || combine.Params[0].Buffer != "o_part" || combine.Params[1].Buffer != "lse_part" ||
				combine.Params[2].Buffer != "o" || int(combine.Params[3].Value) != rows || int(combine.Params[4].Value) != tc.splits {
				t.Errorf("combine %+v, want %s over %d rows of %d splits", combine, wantCombine, rows, tc.splits)
			}
			// Every key of the longest range is in some split, and the last
			// split starts inside it.
			visible := min(s.contextLen, s.window+s.qLen)
			if s.window < 0 {
				visible = s.contextLen
			}
			if (tc.splits-1)*tc.splitKeys >= visible || tc.splits*tc.splitKeys < visible || tc.splitKeys%atoi(t, or(tc.tunables[decodeTileN], "64")) != 0 {
				t.Errorf("%d splits of %d keys for %d visible keys", tc.splits, tc.splitKeys, visible)
			}
		})
	}
}

// What the decode kernels cannot run is refused with the reason (reported
// as unsupported), and a malformed case is the plan's fault.
func TestDecodePlanRefusals(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*decodeShape, *cudakit.OpCase)
		tunables map[string]string
		want     string
		invalid  bool
	}{
		{"fp32", func(s *decodeShape, c *cudakit.OpCase) { s.dtype = sdk.FP32; *c = s.opCase() }, nil, "dtype fp32", false},
		{"head dim 96", func(s *decodeShape, c *cudakit.OpCase) { s.dim = 96; *c = s.opCase() }, nil, "head dim 96", false},
		{"int64 block table", func(_ *decodeShape, c *cudakit.OpCase) { c.Inputs[3].DType = "int64" }, nil, "block_table is int64", false},
		{"kv heads that do not divide heads", func(s *decodeShape, c *cudakit.OpCase) { s.kvHeads = 5; *c = s.opCase() }, nil, "not a multiple", false},
		{"unknown splits", func(*decodeShape, *cudakit.OpCase) {}, map[string]string{numSplits: "many"}, "num_splits", false},
		{"bad window", func(_ *decodeShape, c *cudakit.OpCase) { c.Params["window_left"] = "-2" }, nil, "window_left -2", false},
		{"bad softcap", func(_ *decodeShape, c *cudakit.OpCase) { c.Params["softcap"] = "-1" }, nil, "softcap -1", false},
		{"bad causal", func(_ *decodeShape, c *cudakit.OpCase) { c.Params["causal"] = "maybe" }, nil, "causal", false},
		{"no block table", func(_ *decodeShape, c *cudakit.OpCase) { c.Inputs = c.Inputs[:3] }, nil, "block_table", true},
		{"v_cache of another shape", func(_ *decodeShape, c *cudakit.OpCase) { c.Inputs[2].Dims = []int{1, 16, 8, 128} }, nil, "do not agree", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := llama
			c := s.opCase()
			tc.change(&s, &c)
			_, err := planDecode(c, tc.tunables)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("planDecode = %v, want an error about %q", err, tc.want)
			}
			if got := errors.Is(err, cudakit.ErrInvalidPlan); got != tc.invalid {
				t.Errorf("ErrInvalidPlan %v, want %v: %v", got, tc.invalid, err)
			}
		})
	}
}

// Defaults, as a case that names none of the masking params sends them:
// causal, no window, no softcap, scale 1/sqrt(D).
func TestDecodePlanParamDefaults(t *testing.T) {
	c := llama.opCase()
	for _, k := range []string{"causal", "window_left", "softcap", "context_len", "context_dist"} {
		delete(c.Params, k)
	}
	l, err := planDecode(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if causal, window := int32(uint32(l.Params[14].Value)), int32(uint32(l.Params[15].Value)); causal != 1 || window != -1 {
		t.Errorf("causal %d, window %d; want 1 and -1", causal, window)
	}
	if cap := math.Float32frombits(uint32(l.Params[17].Value)); cap != 0 {
		t.Errorf("softcap %v, want 0", cap)
	}
	// Without context_len the splits share what the block table reaches.
	if keys := int32(uint32(l.Params[13].Value)); keys != 8192 {
		t.Errorf("split_keys %d, want 8192", keys)
	}
}

// Tunables: decode's apply to decode and to attention (whose split kernel
// they set up), attention's own to attention alone, so a decode request
// naming one of them is refused; each default is among its values.
func TestDecodeTunablesApplyToDecodeAndTheSplitKernel(t *testing.T) {
	all := slices.Concat(tunables, decodeTunables)
	for _, tun := range all {
		if !slices.Contains(tun.Values, tun.Default) {
			t.Errorf("tunable %s: default %q not among %v", tun.Name, tun.Default, tun.Values)
		}
	}
	got, err := sdk.ResolveTunables(all, decodeOp, nil)
	if err != nil || !maps.Equal(got, decodeDefaults()) {
		t.Errorf("decode resolves to %v, %v; want its defaults %v", got, err, decodeDefaults())
	}
	att, err := sdk.ResolveTunables(all, attention.Name, nil)
	if err != nil || len(att) != len(all) || att[numSplits] != autoSplitsValue || att[kernelChoice] != kernelAuto {
		t.Errorf("attention resolves to %v, %v; want all %d tunables", att, err, len(all))
	}
	if _, err := sdk.ResolveTunables(all, attention.Name, map[string]string{numSplits: "4"}); err != nil {
		t.Errorf("an attention request naming num_splits: %v", err)
	}
	if _, err := sdk.ResolveTunables(all, decodeOp, map[string]string{overlap: "1"}); err == nil {
		t.Error("a decode request naming overlap is accepted")
	}
}

// Every tunable combination plans every dtype and head dim to an
// instantiated kernel with a well-formed launch, and every decode kernel in
// kernel.cu is reached. Where the ops registry knows decode, the kit's check
// (cudatest.CheckOpPlans, on the cases the host would make) runs too.
func TestDecodePlansReachEveryInstantiatedKernel(t *testing.T) {
	defined := cudatest.InstantiatedOpKernels(kernelSource, decodeOp)
	if len(defined) != 2*2*2*2+2*2 {
		t.Errorf("kernel.cu instantiates %d decode kernels: %v", len(defined), defined)
	}
	used := map[string]bool{}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		for _, dim := range []int{64, 128} {
			for _, shape := range []decodeShape{
				{batch: 2, qLen: 1, heads: 8, kvHeads: 2, pageSize: 16, contextLen: 1000, causal: true, window: -1},
				{batch: 1, qLen: 4, heads: 16, kvHeads: 2, pageSize: 48, contextLen: 4000, causal: false, window: 100, softcap: 30},
			} {
				shape.dtype, shape.dim = dtype, dim
				c := shape.opCase()
				for _, combo := range conformance.Combinations(decodeTunables) {
					l, err := planDecode(c, combo)
					if err != nil {
						t.Errorf("%v %v: %v", shape, combo, err)
						continue
					}
					if err := l.ValidateWith(append(names(c.Inputs), names(c.Outputs)...)); err != nil {
						t.Errorf("%v %v: %v", shape, combo, err)
					}
					for _, step := range l.Steps() {
						if !slices.Contains(defined, step.Function) {
							t.Errorf("%v %v: kernel %s is not instantiated", shape, combo, step.Function)
						}
						used[step.Function] = true
					}
				}
			}
		}
	}
	for _, k := range defined {
		if !used[k] {
			t.Errorf("kernel.cu instantiates %s, which no plan uses", k)
		}
	}
	var params []op.Params
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		for _, dim := range []int{64, 128} {
			s := llama
			s.dtype, s.dim, s.batch = dtype, dim, 1
			params = append(params, s.params())
		}
	}
	cudatest.CheckOpPlans(t, spec(), kernelSource, cudatest.OpCases(t, decodeOp, params...))
}

// The variant lists decode with its own capabilities, masks, plan and
// tunables, and the spec passes CheckOps.
func TestDeclaresDecode(t *testing.T) {
	s := spec()
	if err := s.CheckOps(); err != nil {
		t.Fatal(err)
	}
	v := s.Variant
	caps := v.CapabilitiesOf(decodeOp)
	if !slices.Equal(v.Ops, []string{attention.Name, decodeOp}) || s.Ops[decodeOp] == nil ||
		!slices.Equal(caps.DTypes, []sdk.DType{sdk.FP16, sdk.BF16}) || !slices.Equal(caps.HeadDims, []int{64, 128}) ||
		!caps.Causal || !caps.NonCausal || !caps.GroupedQueryHeads || !caps.NeedsGPU ||
		!caps.Applies(sdk.MaskWindow) || !caps.Applies(sdk.MaskSoftcap) {
		t.Errorf("variant %+v", v)
	}
	if !slices.Equal(v.CapabilitiesOf(attention.Name).DTypes, capabilities.DTypes) {
		t.Errorf("attention's capabilities changed: %+v", v.CapabilitiesOf(attention.Name))
	}
	for _, name := range []string{numSplits, decodeTileN, decodeStages} {
		if !slices.ContainsFunc(v.Tunables, func(tun sdk.Tunable) bool { return tun.Name == name }) {
			t.Errorf("no tunable %s", name)
		}
	}
}

func names(files []sdk.TensorFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
