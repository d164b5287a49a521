package cudakit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

func TestAttentionGridAndName(t *testing.T) {
	s := sdk.Shape{Batch: 3, Heads: 7, KVHeads: 7, SeqQ: 97, SeqK: 5, HeadDim: 128, DType: sdk.BF16}
	g, err := AttentionGrid(s, 48)
	if err != nil || g != (gpu.Dim3{X: 3, Y: 7, Z: 3}) {
		t.Errorf("AttentionGrid = %+v, %v", g, err)
	}
	if _, err := AttentionGrid(sdk.Shape{Batch: 70000, Heads: 1, SeqQ: 1}, 16); err == nil {
		t.Error("a batch beyond the grid limit was accepted")
	}
	if got := KernelName(sdk.BF16, 128, "n32", "s2"); got != "attn_fwd_bf16_d128_n32_s2" {
		t.Errorf("KernelName = %s", got)
	}
	if got := KernelName(sdk.FP16, 64); got != "attn_fwd_fp16_d64" {
		t.Errorf("KernelName without suffix = %s", got)
	}
}

// A key grid has one block per key tile of each key/value head.
func TestKeyGrid(t *testing.T) {
	tests := []struct {
		shape sdk.Shape
		keys  int
		want  gpu.Dim3
		err   string
	}{
		{sdk.Shape{Batch: 3, Heads: 8, KVHeads: 2, SeqQ: 5, SeqK: 97}, 32, gpu.Dim3{X: 4, Y: 2, Z: 3}, ""},
		{sdk.Shape{Batch: 1, Heads: 4, KVHeads: 4, SeqQ: 500, SeqK: 64}, 64, gpu.Dim3{X: 1, Y: 4, Z: 1}, ""},
		{sdk.Shape{Batch: 70000, Heads: 1, KVHeads: 1, SeqK: 1}, 16, gpu.Dim3{}, "exceeds the CUDA grid limit"},
		{sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqK: 1}, 0, gpu.Dim3{}, "keys per block 0 must be positive"},
	}
	for _, tc := range tests {
		g, err := KeyGrid(tc.shape, tc.keys)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("KeyGrid(%s, %d) = %v, want an error with %q", tc.shape, tc.keys, err, tc.err)
			}
			continue
		}
		if err != nil || g != tc.want {
			t.Errorf("KeyGrid(%s, %d) = %+v, %v; want %+v", tc.shape, tc.keys, g, err, tc.want)
		}
	}
}

// The kernels read int and float parameters from the low 4 bytes of their
// slots; the order is the one attention.cuh documents.
func TestKernelArgs(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 8, KVHeads: 2, SeqQ: 77, SeqK: 131, HeadDim: 64, DType: sdk.FP16, Causal: true}
	args := KernelArgs(gpu.Pointer(0x1000), gpu.Pointer(0x2000), gpu.Pointer(0x3000), gpu.Pointer(0x4000), s)
	want := []uint64{0x1000, 0x2000, 0x3000, 0x4000, 8, 2, 77, 131, 1}
	if len(args) != len(want)+1 {
		t.Fatalf("%d args, want %d", len(args), len(want)+1)
	}
	for i, w := range want {
		if uint64(args[i]) != w {
			t.Errorf("arg %d = %#x, want %#x", i, uint64(args[i]), w)
		}
	}
	var slot [8]byte
	binary.LittleEndian.PutUint64(slot[:], uint64(args[9]))
	scale := math.Float32frombits(binary.LittleEndian.Uint32(slot[:4]))
	if want := float32(math.Log2E / 8); scale != want {
		t.Errorf("scale·log2(e) = %v, want %v", scale, want)
	}
}

// AttentionParams is the same list as Params: the tensors by name, the
// scalars by value.
func TestAttentionParamsAreKernelArgs(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 8, KVHeads: 2, SeqQ: 77, SeqK: 131, HeadDim: 64, DType: sdk.FP16, Causal: true}
	args := KernelArgs(gpu.Pointer(0x1000), gpu.Pointer(0x2000), gpu.Pointer(0x3000), gpu.Pointer(0x4000), s)
	params := AttentionParams(s)
	if len(params) != len(args) {
		t.Fatalf("%d params, %d args", len(params), len(args))
	}
	for i, name := range []string{"q", "k", "v", "o"} {
		if params[i].Buffer != name {
			t.Errorf("param %d names %q, want %q", i, params[i].Buffer, name)
		}
	}
	for i := 4; i < len(args); i++ {
		if params[i].Buffer != "" || params[i].Value != args[i] {
			t.Errorf("param %d = %+v, want the value %#x", i, params[i], uint64(args[i]))
		}
	}
}

func TestSpinGrowsOnlyWhenTheHostOutlastsIt(t *testing.T) {
	if !spinCovered(100*time.Microsecond, 10*time.Microsecond) {
		t.Error("10 µs of queueing behind a 100 µs spin is covered")
	}
	if spinCovered(100*time.Microsecond, 80*time.Microsecond) {
		t.Error("80 µs of queueing behind a 100 µs spin is too close to be covered")
	}
	spin, ok := longerSpin(hotSpin)
	if !ok || spin != 2*hotSpin {
		t.Errorf("longerSpin(%v) = %v %v", hotSpin, spin, ok)
	}
	if spin, ok := longerSpin(4 * time.Millisecond); !ok || spin != maxSpin {
		t.Errorf("longerSpin(4ms) = %v %v, want the cap", spin, ok)
	}
	if _, ok := longerSpin(maxSpin); ok {
		t.Error("the spin grew past maxSpin")
	}
	s := defaultSpinLengths()
	*s.of(true) = time.Millisecond
	if s.hot != hotSpin || s.cold != time.Millisecond {
		t.Errorf("growing the cold spin changed %+v", s)
	}
}

func TestReadInputsChecksSizesAndHashes(t *testing.T) {
	dir := t.TempDir()
	s := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 1, SeqQ: 3, SeqK: 4, HeadDim: 2, DType: sdk.FP16}
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := sdk.Tensors{Q: write("q", 24), K: write("k", 16), V: write("v", 16)}
	in, err := readInputs(files, s)
	if err != nil {
		t.Fatal(err)
	}
	all := sha256.Sum256([]byte(strings.Repeat("x", 24+16+16)))
	if want := hex.EncodeToString(all[:]); in.sha256 != want {
		t.Errorf("hash %s, want the hash of Q, K and V concatenated, %s", in.sha256, want)
	}
	files.V = write("v-short", 15)
	_, err = readInputs(files, s)
	if err == nil || !strings.Contains(err.Error(), "V input") || !strings.Contains(err.Error(), "has 15 bytes, want 16") {
		t.Errorf("short V: %v", err)
	}
}

func TestFacts(t *testing.T) {
	m := gpu.Manifest{SourceSHA256: "abcdef0123456789", NVCCVersion: "Cuda compilation tools, release 11.8, V11.8.89",
		Flags: []string{"-O3"}, Gencode: []string{"arch=compute_90,code=sm_90"}, Cubins: []string{"sm_90"}, PTX: []string{"compute_90"}}
	facts := mergeFacts(buildFacts(m, gpu.Target{Arch: "sm_90"}), launchFacts(
		Launch{Function: "attn_fwd_fp16_d64_n32_s2", Grid: gpu.Dim3{X: 11, Y: 8, Z: 1}, Block: gpu.Dim3{X: 192, Y: 1, Z: 1}, DynamicSharedBytes: 36480},
		gpu.FuncResources{Registers: 80, LocalBytes: 8, StaticSharedBytes: 0, MaxThreadsPerBlock: 768, BinaryVersion: 90, PTXVersion: 78},
		2), tunableFacts(map[string]string{"tile_n": "32"}))
	want := map[string]string{
		FactKernelTarget: "sm_90 cubin", FactCompilerFlags: "-O3 -gencode arch=compute_90,code=sm_90", FactFatbinArchs: "sm_90,compute_90",
		FactRegisters: "80", FactSpillBytes: "8", FactDynamicShared: "36480", FactBinaryVersion: "9.0", FactPTXVersion: "7.8",
		FactOccupancy: "2", FactGrid: "11x8x1", FactBlock: "192x1x1", "tunable.tile_n": "32",
	}
	for k, v := range want {
		if facts[k] != v {
			t.Errorf("fact %s = %q, want %q", k, facts[k], v)
		}
	}
	if got := buildString(m); got != "kernels abcdef012345, Cuda compilation tools, release 11.8, V11.8.89" {
		t.Errorf("build string %q", got)
	}
}

func TestHotBatchLastsAbout100Microseconds(t *testing.T) {
	tests := []struct {
		single time.Duration
		want   int
	}{
		{7400 * time.Nanosecond, 14},
		{30 * time.Microsecond, 4},
		{100 * time.Microsecond, 1},
		{2 * time.Millisecond, 1},
		{time.Microsecond, 32},
		{0, 32},
	}
	for _, tt := range tests {
		if got := hotBatch(tt.single); got != tt.want {
			t.Errorf("hotBatch(%v) = %d, want %d", tt.single, got, tt.want)
		}
	}
}

func TestCheckDevice(t *testing.T) {
	hopperOnly := func(d gpu.DeviceInfo) error {
		if d.Major != 9 || d.Minor != 0 {
			return errors.New("needs compute capability 9.0")
		}
		return nil
	}
	generic := gpu.Manifest{Cubins: []string{"sm_80", "sm_90"}}
	sm90a := gpu.Manifest{Cubins: []string{"sm_90a"}}
	tests := []struct {
		name  string
		major int
		minor int
		m     gpu.Manifest
		check func(gpu.DeviceInfo) error
		want  string // the target, or the error's text
	}{
		{"ampere, generic kernels", 8, 0, generic, nil, "sm_80 cubin"},
		{"turing is too old", 7, 5, generic, nil, "T4 has compute capability 7.5; the kernels need 8.0 or newer"},
		{"hopper kernels on hopper", 9, 0, sm90a, hopperOnly, "sm_90a cubin"},
		{"hopper kernels on ada: the plugin's reason", 8, 9, sm90a, hopperOnly, "needs compute capability 9.0"},
		{"no plugin check: the fatbin's reason", 8, 9, sm90a, nil, "the fatbin has no code for compute capability 8.9 (cubins [sm_90a], PTX [])"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target, err := checkDevice(gpu.DeviceInfo{Name: "T4", Major: tc.major, Minor: tc.minor}, tc.m, tc.check)
			got := target.String()
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("checkDevice = %q, want %q", got, tc.want)
			}
		})
	}
}

// kMap is a tensor map of attention's K, [B·KVH, Sk, D] with D 128, in
// boxes of 64 keys and 64 elements.
var kMap = TensorMap{Buffer: "k", DType: sdk.FP16, Dims: []uint64{128, 77, 2}, Box: []uint32{64, 64, 1}}

func TestLaunchValidate(t *testing.T) {
	one := gpu.Dim3{X: 1, Y: 1, Z: 1}
	ok := Launch{Function: "split", Grid: one, Block: gpu.Dim3{X: 128, Y: 1, Z: 1},
		Params:  []Param{BufferParam("q"), BufferParam("partial"), ValueParam(gpu.Int32(3))},
		Scratch: []Scratch{{Name: "partial", Bytes: 64, Reset: true}},
		Then:    []Launch{{Function: "combine", Grid: one, Block: one, Params: []Param{BufferParam("partial"), BufferParam("o")}}}}
	with := func(f func(*Launch)) Launch {
		l := ok
		l.Scratch = slices.Clone(ok.Scratch)
		l.Then = slices.Clone(ok.Then)
		f(&l)
		return l
	}
	tests := []struct {
		name string
		l    Launch
		want string
	}{
		{"fine", ok, ""},
		{"scratch named o", with(func(l *Launch) { l.Scratch[0].Name = "o" }), `scratch buffer "o": the name is taken`},
		{"empty scratch", with(func(l *Launch) { l.Scratch[0].Bytes = 0 }), `scratch buffer "partial": size 0 bytes must be positive`},
		{"unknown buffer", with(func(l *Launch) { l.Then[0].Params = []Param{BufferParam("lse")} }), `combine: parameter names buffer "lse"; there are q, k, v, o, partial`},
		{"nested scratch", with(func(l *Launch) { l.Then[0].Scratch = []Scratch{{Name: "x", Bytes: 1}} }), "combine: a following kernel has its own scratch or following kernels; declare them on the first"},
		{"reset, not whole words", with(func(l *Launch) { l.Scratch[0].Bytes = 6 }), `scratch buffer "partial": a buffer reset word by word needs a size that is a multiple of 4, not 6`},
		{"empty grid", with(func(l *Launch) { l.Then[0].Grid = gpu.Dim3{X: 0, Y: 1, Z: 1} }), "combine: grid {0 1 1} and block {1 1 1} must be positive"},
		{"a tensor map", with(func(l *Launch) { l.Params = append(l.Params, TensorMapParam(kMap)) }), ""},
		{"a tensor map of no buffer", with(func(l *Launch) {
			m := kMap
			m.Buffer = "kv"
			l.Params = []Param{TensorMapParam(m)}
		}), `split: a tensor map of buffer "kv"; there are q, k, v, o, partial`},
		{"a tensor map's box past the swizzle", with(func(l *Launch) {
			m := kMap
			m.Box = []uint32{128, 64, 1}
			l.Params = []Param{TensorMapParam(m)}
		}), "split: tensor map: an innermost box of 256 bytes; the 128-byte swizzle takes at most 128"},
		{"a tensor map's rank", with(func(l *Launch) {
			m := kMap
			m.Box = []uint32{64, 64}
			l.Params = []Param{TensorMapParam(m)}
		}), "split: tensor map: a box of rank 2 for dims of rank 3"},
		{"a tensor map's stride", with(func(l *Launch) {
			m := kMap
			m.Dims = []uint64{36, 77, 2}
			m.Box = []uint32{36, 64, 1}
			l.Params = []Param{TensorMapParam(m)}
		}), "split: tensor map: a stride of 72 bytes after dim 0, not a multiple of 16"},
	}
	for _, tc := range tests {
		err := tc.l.Validate()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if n := ok.ScratchBytes(); n != 64 {
		t.Errorf("ScratchBytes = %d", n)
	}
}

func TestScratchFacts(t *testing.T) {
	l := Launch{Scratch: []Scratch{Zeroed("partial", 64), {Name: "lse", Bytes: 8}, {Name: "m", Bytes: 16, Reset: true, Word: 0xff800000}},
		OutputReset: true}
	got := scratchFacts(l)
	want := map[string]string{"scratch_bytes": "88", "scratch.partial": "64 zeroed", "scratch.lse": "8",
		"scratch.m": "16 reset to 0xff800000", "output_reset": "zeroed"}
	if !maps.Equal(got, want) {
		t.Errorf("scratchFacts = %v, want %v", got, want)
	}
	if scratchFacts(Launch{}) != nil {
		t.Error("facts for a plan without scratch")
	}
}
