package cudahopper

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

// The byte counts are worked out by hand from HopperLayout in kernel.cu, so
// a change to either side shows up here.
func TestSharedBytesMatchTheKernelLayout(t *testing.T) {
	const h100OptIn = 227 * 1024 // the H100's per-block opt-in limit
	tests := []struct {
		headDim, tileN, stages int
		want                   int
	}{
		// Q 128·64·2=16384, K+V 2·2·(64·64·2=8192), barriers 4·2·8 (K's and
		// V's full and empty), slack 1024
		{64, 64, 2, 16384 + 4*8192 + 64 + 1024},
		// Q 128·128·2=32768, K+V 2·3·(128·128·2=32768), barriers 96: the largest
		{128, 128, 3, 32768 + 6*32768 + 96 + 1024},
	}
	for _, tc := range tests {
		if got := sharedBytes(2, tc.headDim, tc.tileN, tc.stages); got != tc.want {
			t.Errorf("sharedBytes(D%d, n%d, s%d) = %d, want %d", tc.headDim, tc.tileN, tc.stages, got, tc.want)
		}
	}
	if got := sharedBytes(2, 128, 128, 3); got > h100OptIn {
		t.Errorf("the largest configuration needs %d bytes, over the H100's %d", got, h100OptIn)
	}
	// The persistent schedule adds an O tile of Q's size where it fits
	// (kOwnO), and else stores O through Q.
	persistent := []struct {
		headDim, tileN, stages int
		want                   int
	}{
		{64, 64, 2, 16384 + 16384 + 4*8192 + 64 + 1024},
		{128, 128, 2, 32768 + 32768 + 4*32768 + 64 + 1024},
		{128, 64, 3, 32768 + 32768 + 6*16384 + 96 + 1024},
		{128, 128, 3, 32768 + 6*32768 + 96 + 1024}, // 32 KiB more would not fit
	}
	for _, tc := range persistent {
		got := persistentSharedBytes(2, tc.headDim, tc.tileN, tc.stages)
		if got != tc.want {
			t.Errorf("persistentSharedBytes(D%d, n%d, s%d) = %d, want %d", tc.headDim, tc.tileN, tc.stages, got, tc.want)
		}
		if got > h100OptIn {
			t.Errorf("persistent D%d n%d s%d needs %d bytes, over the H100's %d", tc.headDim, tc.tileN, tc.stages, got, h100OptIn)
		}
	}
}

// producer = tma-persistent: one block an SM at most (fewer where there are
// fewer tiles), the TMA kernel's parameters, then the batch and the tile
// counter, a 4-byte scratch zeroed before every call.
func TestPersistentPlan(t *testing.T) {
	tests := []struct {
		shape       sdk.Shape
		function    string
		grid        int
		sharedBytes int
	}{
		{sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.FP16},
			"attn_fwd_fp16_d128_n128_s2_o1_tma_persistent", hopperSMs, persistentSharedBytes(2, 128, 128, 2)},
		// 3 query tiles × 2 × 4 heads: fewer tiles than SMs.
		{sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 257, SeqK: 131, HeadDim: 64, DType: sdk.BF16, Causal: true},
			"attn_fwd_bf16_d64_n128_s2_o1_tma_persistent", 24, persistentSharedBytes(2, 64, 128, 2)},
	}
	for _, tc := range tests {
		l, err := plan(tc.shape, withDefaults(map[string]string{kernelChoice: kernelWGMMA, kvStages: "2", producer: producerPersistent}))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		if l.Function != tc.function || l.Grid != (gpu.Dim3{X: tc.grid, Y: 1, Z: 1}) || l.DynamicSharedBytes != tc.sharedBytes {
			t.Errorf("%v: launch %s grid %+v shared %d, want %s grid %d shared %d", tc.shape, l.Function, l.Grid,
				l.DynamicSharedBytes, tc.function, tc.grid, tc.sharedBytes)
		}
		tma, err := plan(tc.shape, withDefaults(map[string]string{kernelChoice: kernelWGMMA, kvStages: "2", producer: producerTMA}))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Params) != len(tma.Params)+2 {
			t.Fatalf("%d params, want the TMA kernel's %d and two more", len(l.Params), len(tma.Params))
		}
		for i := range tma.Params {
			if !reflect.DeepEqual(l.Params[i], tma.Params[i]) {
				t.Errorf("param %d: %+v, want the TMA kernel's %+v", i, l.Params[i], tma.Params[i])
			}
		}
		if got := int32(uint32(l.Params[len(tma.Params)].Value)); got != int32(tc.shape.Batch) {
			t.Errorf("batch param %d, want %d", got, tc.shape.Batch)
		}
		if l.Params[len(tma.Params)+1].Buffer != tileCounter ||
			!slices.Equal(l.Scratch, []cudakit.Scratch{{Name: tileCounter, Bytes: 4, Reset: true, Word: 0}}) {
			t.Errorf("counter param %+v, scratch %+v", l.Params[len(tma.Params)+1], l.Scratch)
		}
	}
}

func TestPlanGeometry(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 257, SeqK: 131, HeadDim: 128, DType: sdk.BF16, Causal: true}
	l, err := plan(s, map[string]string{kernelChoice: kernelWGMMA, tileN: "64", kvStages: "2", overlap: "1", producer: "ahead"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_bf16_d128_n64_s2_o1_ahead" || l.Grid.X != 3 || l.Block.X != 384 ||
		l.DynamicSharedBytes != sharedBytes(2, 128, 64, 2) {
		t.Errorf("plan = %+v", l)
	}
}

func TestRefusesDevicesOtherThanHopper(t *testing.T) {
	tests := []struct {
		device gpu.DeviceInfo
		want   string // "" when accepted
	}{
		{gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0}, ""},
		{gpu.DeviceInfo{Name: "NVIDIA L4", Major: 8, Minor: 9},
			"cuda-hopper needs a Hopper GPU (compute capability 9.0, sm_90a); NVIDIA L4 has 8.9"},
		{gpu.DeviceInfo{Name: "NVIDIA B200", Major: 10, Minor: 0},
			"cuda-hopper needs a Hopper GPU (compute capability 9.0, sm_90a); NVIDIA B200 has 10.0"},
	}
	for _, tc := range tests {
		got := ""
		if err := requireHopper(tc.device); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("requireHopper(%s) = %q, want %q", tc.device.Name, got, tc.want)
		}
	}
}

// The instructions the README promises are in the sources the fatbin is
// built from (kernel.cu and the shared header); the SASS check is
// scripts/hopper/device-check.sh's, on a Hopper machine.
func TestKernelUsesTheHopperInstructions(t *testing.T) {
	var all strings.Builder
	for _, src := range cudakit.Sources(kernelPath, kernelSource) {
		all.Write(src)
	}
	for _, want := range []string{"wgmma.mma_async", "setmaxnreg.dec", "setmaxnreg.inc", "mbarrier.try_wait.parity",
		"fence.proxy.async", "ex2.approx"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the kernel sources do not use %s", want)
		}
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}

// The attention plan's choice of kernel and the split kernel's launch on
// attention's tensors: auto takes the split kernel up to splitMaxRows query
// rows a head, a forced choice holds at any shape, and the launch is the
// dense twin of decode's (its splits, scratch and combine as decode's).
func TestPlanChoosesTheKernel(t *testing.T) {
	decode := sdk.Shape{Batch: 3, Heads: 5, KVHeads: 1, SeqQ: 1, SeqK: 8191, HeadDim: 128, DType: sdk.FP16}
	seed := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}
	seedCausal := seed
	seedCausal.Causal = true
	spec16 := sdk.Shape{Batch: 2, Heads: 32, KVHeads: 8, SeqQ: 16, SeqK: 4000, HeadDim: 64, DType: sdk.BF16, Causal: true}
	spec17 := spec16
	specFull := spec16
	specFull.Causal = false
	spec17.SeqQ = 17
	huge := sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 8192, SeqK: 8192, HeadDim: 128, DType: sdk.FP16}
	tests := []struct {
		name     string
		shape    sdk.Shape
		tunables map[string]string
		function string
		grid     gpu.Dim3
		// splitKeys and splits: the split kernel's (0 for wgmma).
		splitKeys, splits int
		err               string
	}{
		{"decode shape, auto: split, 3 sequences over 128 tiles in 43 splits", decode, nil,
			"attn_fwd_fp16_d128_split_n64_s3", gpu.Dim3{X: 43, Y: 1, Z: 3}, 192, 43, ""},
		{"decode shape, wgmma forced", decode, map[string]string{kernelChoice: kernelWGMMA, tileN: "128", kvStages: "3", overlap: "2", producer: "ahead"},
			"attn_fwd_fp16_d128_n128_s3_o2_ahead", gpu.Dim3{X: 1, Y: 5, Z: 3}, 0, 0, ""},
		{"seed shape, auto: split (32 wgmma blocks), one split", seed, map[string]string{kernelChoice: kernelAuto, tileN: "128", kvStages: "3", overlap: "2", producer: "ahead"},
			"attn_fwd_fp16_d64_split_n64_s3", gpu.Dim3{X: 32, Y: 8, Z: 1}, 512, 1, ""},
		{"seed shape, wgmma forced: the persistent grid, one block a tile", seed, map[string]string{kernelChoice: kernelWGMMA},
			"attn_fwd_fp16_d64_n128_s2_o1_tma_persistent", gpu.Dim3{X: 32, Y: 1, Z: 1}, 0, 0, ""},
		{"seed shape, wgmma and the grid kernel forced", seed, map[string]string{kernelChoice: kernelWGMMA, producer: producerTMA, kvStages: "3", overlap: "2"},
			"attn_fwd_fp16_d64_n128_s3_o2_tma", gpu.Dim3{X: 4, Y: 8, Z: 1}, 0, 0, ""},
		{"B1 H8 S1024, auto: wgmma (64 tiles)", sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 1024, SeqK: 1024, HeadDim: 64, DType: sdk.FP16}, nil,
			"attn_fwd_fp16_d64_n128_s2_o1_tma_persistent", gpu.Dim3{X: 64, Y: 1, Z: 1}, 0, 0, ""},
		{"B1 H8 S64×32768, auto: split over the keys", sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 64, SeqK: 32768, HeadDim: 128, DType: sdk.FP16}, nil,
			"attn_fwd_fp16_d128_split_n64_s3", gpu.Dim3{X: 4 * 8, Y: 8, Z: 1}, 4096, 8, ""},
		{"seed shape, split forced: 256 blocks fill the SMs, one split", seed, map[string]string{kernelChoice: kernelSplit},
			"attn_fwd_fp16_d64_split_n64_s3", gpu.Dim3{X: 32, Y: 8, Z: 1}, 512, 1, ""},
		{"seed shape, split forced, 3 splits asked", seed, map[string]string{kernelChoice: kernelSplit, numSplits: "3"},
			"attn_fwd_fp16_d64_split_n64_s3", gpu.Dim3{X: 96, Y: 8, Z: 1}, 192, 3, ""},
		{"causal, 128 query rows over 512 keys: splits cover the 128 keys the rows see", sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 128, SeqK: 512, HeadDim: 64, DType: sdk.FP16, Causal: true},
			map[string]string{kernelChoice: kernelSplit, numSplits: "2", decodeTileN: "64"},
			"attn_fwd_fp16_d64_split_n64_s3", gpu.Dim3{X: 16, Y: 2, Z: 1}, 64, 2, ""},
		{"seed causal, split forced, 128-key tiles, 2 stages", seedCausal, map[string]string{kernelChoice: kernelSplit, numSplits: "4", decodeTileN: "128", decodeStages: "2"},
			"attn_fwd_fp16_d64_split_n128_s2", gpu.Dim3{X: 128, Y: 8, Z: 1}, 128, 4, ""},
		{"16 GQA rows a head, causal top-left: 4 row blocks see 16 keys, one split", spec16, nil,
			"attn_fwd_bf16_d64_split_n64_s3", gpu.Dim3{X: 4, Y: 8, Z: 2}, 64, 1, ""},
		{"16 GQA rows a head, not causal: 4 row blocks × 6 splits", specFull, nil,
			"attn_fwd_bf16_d64_split_n64_s3", gpu.Dim3{X: 4 * 6, Y: 8, Z: 2}, 704, 6, ""},
		{"17 rows a head, auto: wgmma", spec17, nil,
			"attn_fwd_bf16_d64_n128_s2_o1_tma_persistent", gpu.Dim3{X: 64, Y: 1, Z: 1}, 0, 0, ""},
		{"64 splits forced on a large case: too much scratch", huge, map[string]string{kernelChoice: kernelSplit, numSplits: "64"},
			"", gpu.Dim3{}, 0, 0, "GiB of partials"},
		{"an unknown kernel", seed, map[string]string{kernelChoice: "tma"}, "", gpu.Dim3{}, 0, 0, `tunable kernel: "tma"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tun := tc.tunables
			if tun == nil || tun[tileN] == "" {
				tun = withDefaults(tun)
			}
			l, err := plan(tc.shape, tun)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("plan = %v, %v; want an error with %q", l.Function, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			if l.Function != tc.function || l.Grid != tc.grid {
				t.Fatalf("launch %s grid %+v; want %s grid %+v", l.Function, l.Grid, tc.function, tc.grid)
			}
			if tc.splits == 0 {
				tma := strings.HasSuffix(l.Function, "_tma")
				persistent := strings.HasSuffix(l.Function, "_tma_persistent")
				if tma && len(l.Params) != 14 || persistent && len(l.Params) != 16 || !tma && !persistent && l.Params != nil ||
					len(l.Then) > 0 || l.Block.X != threads {
					t.Errorf("the wgmma kernel with params %v, then %v, block %+v", l.Params, l.Then, l.Block)
				}
				return
			}
			if len(l.Params) != 13 {
				t.Fatalf("%d params, want 13", len(l.Params))
			}
			for i, want := range []string{"q", "k", "v", "o"} {
				if l.Params[i].Buffer != want {
					t.Errorf("param %d names %q, want %q", i, l.Params[i].Buffer, want)
				}
			}
			value := func(i int) int32 { return int32(uint32(l.Params[i].Value)) }
			s := tc.shape
			causal := int32(0)
			if s.Causal {
				causal = 1
			}
			for i, want := range []int32{int32(s.Heads), int32(s.KVHeads), int32(s.SeqQ), int32(s.SeqK), int32(tc.splitKeys), causal} {
				if got := value(6 + i); got != want {
					t.Errorf("param %d = %d, want %d", 6+i, got, want)
				}
			}
			if got, want := math.Float32frombits(uint32(l.Params[12].Value)), float32(s.Scale()*math.Log2E); got != want {
				t.Errorf("score scale %v, want %v", got, want)
			}
			if tc.splits == 1 {
				if len(l.Then) != 0 || len(l.Scratch) != 0 || l.Params[4].Buffer != "" || l.Params[5].Buffer != "" {
					t.Errorf("one split with then %v, scratch %v, params %v %v", l.Then, l.Scratch, l.Params[4], l.Params[5])
				}
				return
			}
			rows := int64(s.Batch * s.Heads * s.SeqQ)
			if len(l.Then) != 1 || l.Then[0].Function != cudakit.KernelName(s.DType, s.HeadDim, "combine") ||
				l.Then[0].Params[2].Buffer != "o" || int32(uint32(l.Then[0].Params[3].Value)) != int32(rows) ||
				int32(uint32(l.Then[0].Params[4].Value)) != int32(tc.splits) {
				t.Errorf("combine %+v", l.Then)
			}
			if len(l.Scratch) != 2 || l.Scratch[0].Bytes != rows*int64(tc.splits)*int64(s.HeadDim)*4 || l.Scratch[1].Bytes != rows*int64(tc.splits)*4 {
				t.Errorf("scratch %+v", l.Scratch)
			}
		})
	}
}

// withDefaults is the tunables' defaults with over's values on top.
func withDefaults(over map[string]string) map[string]string {
	m := map[string]string{}
	for _, tun := range slices.Concat(tunables, decodeTunables) {
		m[tun.Name] = tun.Default
	}
	maps.Copy(m, over)
	return m
}

// The conformance passes sweep each kernel's own space in full: 48
// combinations of the wgmma kernel's four tunables (12 a producer), 32 of
// the split kernel's three, every case naming its kernel.
func TestKernelPinsSweepEachKernelWhole(t *testing.T) {
	v := spec().Variant
	seen := map[string]map[string]bool{kernelWGMMA: {}, kernelSplit: {}}
	for _, pin := range kernelPins() {
		cases, err := conformance.PinnedCases(v, pin)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.Tunables[kernelChoice] != pin[kernelChoice] {
				t.Errorf("%s: kernel %q, want %s", c.Name(), c.Tunables[kernelChoice], pin[kernelChoice])
			}
			seen[pin[kernelChoice]][fmt.Sprint(c.Tunables)] = true
		}
	}
	if n := len(seen[kernelWGMMA]); n != 48 {
		t.Errorf("the wgmma kernel: %d combinations, want 48", n)
	}
	if n := len(seen[kernelSplit]); n != 32 {
		t.Errorf("the split kernel: %d combinations, want 32", n)
	}
}

// producer = tma: the standard parameters, then tensor maps of Q and O as
// [B·H, seq_q, D] (boxes of 128 and 64 rows) and of K and V as [B·KVH,
// seq_k, D] (boxes of tile_n keys), 64 elements wide.
func TestTMAPlanPassesTensorMaps(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 257, SeqK: 131, HeadDim: 128, DType: sdk.BF16, Causal: true}
	l, err := plan(s, withDefaults(map[string]string{kernelChoice: kernelWGMMA, tileN: "64", producer: producerTMA}))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_bf16_d128_n64_s2_o1_tma" || len(l.Params) != 14 {
		t.Fatalf("launch %s with %d params", l.Function, len(l.Params))
	}
	for i, want := range []struct {
		name string
		dims []uint64
		box  []uint32
	}{
		{"q", []uint64{128, 257, 8}, []uint32{64, 128, 1}},
		{"k", []uint64{128, 131, 4}, []uint32{64, 64, 1}},
		{"v", []uint64{128, 131, 4}, []uint32{64, 64, 1}},
		{"o", []uint64{128, 257, 8}, []uint32{64, 64, 1}},
	} {
		m := l.Params[10+i].TensorMap
		if m == nil || m.Buffer != want.name || m.DType != sdk.BF16 || !slices.Equal(m.Dims, want.dims) || !slices.Equal(m.Box, want.box) {
			t.Errorf("param %d: tensor map %+v, want %+v", 10+i, m, want)
		}
	}
	for i, want := range []string{"q", "k", "v", "o"} {
		if l.Params[i].Buffer != want {
			t.Errorf("param %d names %q, want %q", i, l.Params[i].Buffer, want)
		}
	}
	if got := []int32{int32(uint32(l.Params[4].Value)), int32(uint32(l.Params[7].Value)), int32(uint32(l.Params[8].Value))}; !slices.Equal(got, []int32{4, 131, 1}) {
		t.Errorf("heads, seq_k, causal = %v", got)
	}
}
