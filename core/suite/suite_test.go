package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// fullExample is the example of docs/suites.md, every key set.
const fullExample = `
name = "seed"
description = "demo"
seed = 20251022
baseline = "cuda-v8"
python = "python3.12"
plugin_path = ["plugins", "/opt/flashcore/plugins"]

[measurement]
warmup_runs = 3
warmup_time = "10ms"
min_samples = 5
max_samples = 50
target_noise = 0.01
time_cap = "500ms"
call_samples = 7
l2 = ["cold", "hot"]
call_timeout = "30s"

[check]
full_check_max_pairs = 1000
sampled_rows = 16
repeat = 3

[tolerance.fp16]
atol = 1e-3
[tolerance.bf16]
rel_l2 = 0.05

[[backends]]
name = "cuda-v8"
variants = ["cuda-v8"]
path = "bin/cuda-v8"
[backends.tunables]
tile_n = ["32", "64"]

[[backends]]
name = "triton"

[[sweeps]]
batch = [1, 2]
heads = [8]
kv_heads = [8, 2]
seq_q = [512]
head_dim = [64]
dtype = ["fp16"]
causal = [false, true]

[[cases]]
batch = 1
heads = 8
kv_heads = 2
seq_q = 300
seq_k = 500
head_dim = 64
dtype = "fp16"
causal = true
distribution = "outliers"

[[cases]]   # the same as a sweep case: dropped
batch = 1
heads = 8
seq_q = 512
head_dim = 64

[tolerance.attention.o.bf16]
atol = 0.02
`

func TestParseFullExample(t *testing.T) {
	s, err := Parse(filepath.Join("suites", "demo.toml"), []byte(fullExample))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(fullExample))
	want := &Suite{
		Name: "seed", Description: "demo", Path: "suites/demo.toml", SHA256: hex.EncodeToString(sum[:]),
		Seed: 20251022, Baseline: "cuda-v8", Python: "python3.12",
		PluginPath: []string{"suites/plugins", "/opt/flashcore/plugins"},
		Measurement: sdk.Measurement{WarmupRuns: 3, WarmupTime: 10 * time.Millisecond, MinSamples: 5,
			MaxSamples: 50, TargetNoise: 0.01, TimeCap: 500 * time.Millisecond, L2: sdk.L2Cold, CallSamples: 7, Placements: 5},
		L2Modes:      []sdk.L2Mode{sdk.L2Cold, sdk.L2Hot},
		CallTimeout:  30 * time.Second,
		StartTimeout: 60 * time.Second,
		Check:        op.CheckSettings{FullCheckMaxPairs: 1000, SampledRows: 16, Repeat: 3},
		Tolerances: map[sdk.DType]op.Tolerance{
			sdk.FP16: {Atol: 1e-3, Rtol: 1e-2, RelL2: 2e-3},
			sdk.BF16: {Atol: 1.6e-2, Rtol: 3e-2, RelL2: 0.05},
			sdk.FP32: {Atol: 2e-5, Rtol: 2e-5, RelL2: 2e-5},
		},
		OutputTolerances: map[op.OutputKey]op.Tolerance{
			{Op: "attention", Output: "o", DType: sdk.BF16}: {Atol: 0.02, Rtol: 3e-2, RelL2: 0.05},
		},
		Gates: DefaultGates(),
		Backends: []BackendSelection{
			{Name: "cuda-v8", Line: 31, Variants: []string{"cuda-v8"}, Path: "suites/bin/cuda-v8",
				Tunables: map[string][]string{"tile_n": {"32", "64"}}},
			{Name: "triton", Line: 38, Tunables: map[string][]string{}},
		},
		Warnings: []string{"case b1-h8-s512-d64-fp16 is defined 2 times (its sweeps and cases overlap); it runs once"},
	}
	wantIDs := []string{
		"b1-h8-s512-d64-fp16", "b1-h8-s512-d64-fp16-causal",
		"b1-h8-kv2-s512-d64-fp16", "b1-h8-kv2-s512-d64-fp16-causal",
		"b2-h8-s512-d64-fp16", "b2-h8-s512-d64-fp16-causal",
		"b2-h8-kv2-s512-d64-fp16", "b2-h8-kv2-s512-d64-fp16-causal",
		"b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers",
	}
	if got := caseIDs(s.Cases); !slices.Equal(got, wantIDs) {
		t.Errorf("cases\n got %q\nwant %q", got, wantIDs)
	}
	last := s.Cases[len(s.Cases)-1]
	wantLast := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 2, SeqQ: 300, SeqK: 500, HeadDim: 64, Causal: true, DType: sdk.FP16}
	if attention.ShapeOf(last) != wantLast || last.Distribution != op.Outliers {
		t.Errorf("last case %+v %s, want %+v outliers", attention.ShapeOf(last), last.Distribution, wantLast)
	}
	s.Cases = nil
	if !reflect.DeepEqual(s, want) {
		t.Errorf("suite\n got %+v\nwant %+v", s, want)
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := Parse("min.toml", []byte("name = \"min\"\n[[cases]]\nbatch = 1\nheads = 4\nseq_q = 8\nhead_dim = 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 1 || s.Baseline != "pytorch-sdpa" || s.Python != "" || s.CallTimeout != 120*time.Second {
		t.Errorf("top-level defaults: seed %d baseline %q python %q call timeout %s", s.Seed, s.Baseline, s.Python, s.CallTimeout)
	}
	if s.Measurement != sdk.DefaultMeasurement() || !slices.Equal(s.L2Modes, []sdk.L2Mode{sdk.L2Hot}) {
		t.Errorf("measurement %+v %v, want the contract's defaults", s.Measurement, s.L2Modes)
	}
	if s.Check != op.DefaultCheckSettings() || !reflect.DeepEqual(s.Tolerances, op.DefaultTolerances()) {
		t.Errorf("check %+v tolerances %+v, want defaults", s.Check, s.Tolerances)
	}
	want := attention.NewCase(sdk.Shape{Batch: 1, Heads: 4, KVHeads: 4, SeqQ: 8, SeqK: 8, HeadDim: 16, DType: sdk.FP16}, op.Normal)
	if len(s.Cases) != 1 || !reflect.DeepEqual(s.Cases[0], want) || s.Backends != nil || len(s.PluginPath) != 0 {
		t.Errorf("cases %+v backends %v plugin path %v", s.Cases, s.Backends, s.PluginPath)
	}
}

func TestSweepProductOrder(t *testing.T) {
	doc := `name = "order"
[[sweeps]]
batch = [2, 1]
heads = [4]
seq_q = [16]
seq_k = [16, 32]
head_dim = [8]
dtype = ["bf16", "fp32"]
distribution = ["uniform", "normal"]
`
	s, err := Parse("order.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range []string{"b2", "b1"} {
		for _, sk := range []string{"", "-sk32"} {
			for _, dt := range []string{"bf16", "fp32"} {
				for _, dist := range []string{"-uniform", ""} {
					want = append(want, b+"-h4-s16"+sk+"-d8-"+dt+dist)
				}
			}
		}
	}
	if got := caseIDs(s.Cases); !slices.Equal(got, want) {
		t.Errorf("order\n got %q\nwant %q", got, want)
	}
}

// An empty list of an axis that is the same as another leaves it out, as
// attention's kv_heads = [] and seq_k = [] always have.
func TestEmptySameAsList(t *testing.T) {
	doc := "name = \"x\"\n[[sweeps]]\nbatch = [1]\nheads = [4]\nkv_heads = []\nseq_q = [16]\nseq_k = []\nhead_dim = [8]\n"
	s, err := Parse("same.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := caseIDs(s.Cases), []string{"b1-h4-s16-d8-fp16"}; !slices.Equal(got, want) {
		t.Errorf("cases %q, want %q", got, want)
	}
}

// A value that breaks an op's rule is reported once, at the first value
// of the other axes it fails with, in the order the values are written.
func TestRelationProblemsInValueOrder(t *testing.T) {
	doc := "name = \"x\"\n[[sweeps]]\nbatch = [1, 2]\nheads = [8, 9]\nkv_heads = [2, 3]\nseq_q = [16]\nhead_dim = [8]\n"
	_, err := Parse("rules.toml", []byte(doc))
	want := "rules.toml:5: key \"sweeps.kv_heads\": 2 does not divide heads = 9 (each key/value head serves heads/kv_heads query heads)\n" +
		"rules.toml:5: key \"sweeps.kv_heads\": 3 does not divide heads = 8 (each key/value head serves heads/kv_heads query heads)"
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

func TestCaseID(t *testing.T) {
	tests := []struct {
		shape sdk.Shape
		dist  op.Distribution
		want  string
	}{
		{sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}, op.Normal, "b1-h8-s512-d64-fp16"},
		{sdk.Shape{Batch: 1, Heads: 8, KVHeads: 2, SeqQ: 300, SeqK: 500, HeadDim: 64, DType: sdk.FP16, Causal: true}, op.Outliers,
			"b1-h8-kv2-s300-sk500-d64-fp16-causal-outliers"},
		{sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.BF16}, op.Uniform, "b4-h16-s2048-d128-bf16-uniform"},
		{sdk.Shape{Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 1, SeqK: 7, HeadDim: 32, DType: sdk.FP32, Causal: true}, "", "b2-h2-s1-sk7-d32-fp32-causal"},
	}
	for _, tc := range tests {
		if got := attention.CaseID(tc.shape, tc.dist); got != tc.want {
			t.Errorf("attention.CaseID(%v, %s) = %q, want %q", tc.shape, tc.dist, got, tc.want)
		}
	}
}

// TestShippedSuites loads every suite in suites/ and pins what each holds.
func TestShippedSuites(t *testing.T) {
	tests := []struct {
		file  string
		cases int
		first string
	}{
		{"default.toml", 4, "b1-h8-s512-d64-fp16"},
		{"seed.toml", 4, "b1-h8-s512-d64-fp16"},
		{"llm.toml", 26, "b16-h16-s512-d64-fp16"},
	}
	for _, tc := range tests {
		s, err := Load(filepath.Join("..", "..", "suites", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Cases) != tc.cases || s.Cases[0].ID != tc.first {
			t.Errorf("%s: %d cases starting %s, want %d starting %s", tc.file, len(s.Cases), s.Cases[0].ID, tc.cases, tc.first)
		}
	}
}

func TestDefault(t *testing.T) {
	s := Default()
	want := []string{
		"b1-h8-s512-d64-fp16", "b1-h8-s512-d64-fp16-causal",
		"b1-h2-s128-d64-fp16", "b1-h4-kv2-s96-sk160-d64-fp16-causal",
	}
	if got := caseIDs(s.Cases); !slices.Equal(got, want) {
		t.Errorf("default cases %q, want %q", got, want)
	}
	if s.Measurement.TimeCap != 500*time.Millisecond || s.Measurement.WarmupRuns != 1 || s.SHA256 == "" {
		t.Errorf("default time cap %s, warm-up runs %d, sha %q", s.Measurement.TimeCap, s.Measurement.WarmupRuns, s.SHA256)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.toml")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func caseIDs(cases []op.Case) []string {
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.ID
	}
	return ids
}

// TestDocExample parses the example of docs/suites.md, so the page cannot
// drift from the format.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "suites.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "```toml\n")
	end := strings.Index(text[start+1:], "```\n")
	if start < 0 || end < 0 {
		t.Fatal("docs/suites.md has no toml example")
	}
	s, err := Parse("example.toml", []byte(text[start+len("```toml\n"):start+1+end]))
	if err != nil {
		t.Fatal(err)
	}
	// 2 batch × 2 kv_heads × 2 seq_q × 2 dtype × 2 causal, and one case.
	if len(s.Cases) != 33 || !slices.Equal(s.L2Modes, []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold}) {
		t.Errorf("%d cases, L2 %v", len(s.Cases), s.L2Modes)
	}
}

// A [[backends]] entry may name a Python file instead of a plugin binary;
// its path is resolved against the suite's folder, as plugin paths are.
func TestParsePythonFileBackend(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kernels"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernels", "my_fa.py"), []byte("def attention(q, k, v, *, causal, scale): ...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name = \"x\"\n[[backends]]\nname = \"my-fa\"\npython = \"kernels/my_fa.py\"\n[backends.tunables]\nblock = [\"64\"]\n" + validSweep
	s, err := Parse(filepath.Join(dir, "suite.toml"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []BackendSelection{{Name: "my-fa", Line: 3, Python: filepath.Join(dir, "kernels", "my_fa.py"),
		Tunables: map[string][]string{"block": {"64"}}}}
	if !reflect.DeepEqual(s.Backends, want) {
		t.Errorf("backends\n got %+v\nwant %+v", s.Backends, want)
	}
}

func TestGatesAndAblation(t *testing.T) {
	doc := `name = "x"
[gates]
runs = 5
max_registers = 128
max_shared_bytes = 65536
min_occupancy = 0.25
[ablation]
chain = ["cuda-scalar", "cuda-wmma", "pytorch-sdpa:sdpa-flash"]
` + validSweep
	s, err := Parse("x.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Gates{Runs: 5, MaxRegisters: 128, MaxSpillBytes: 0, MaxSharedBytes: 65536, MinOccupancy: 0.25}
	if s.Gates != want {
		t.Errorf("gates %+v, want %+v", s.Gates, want)
	}
	chain := []ChainStep{{Backend: "cuda-scalar"}, {Backend: "cuda-wmma"}, {Backend: "pytorch-sdpa", Variant: "sdpa-flash"}}
	if !slices.Equal(s.Ablation.Chain, chain) {
		t.Errorf("chain %+v, want %+v", s.Ablation.Chain, chain)
	}
	plain, err := Parse("y.toml", []byte("name = \"y\"\n"+validSweep))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Gates != DefaultGates() || len(plain.Ablation.Chain) != 0 {
		t.Errorf("a suite without [gates] or [ablation]: %+v %+v", plain.Gates, plain.Ablation)
	}
}

// A [[backends]] entry may name a CUDA-file spec; its path is resolved
// against the suite's folder.
func TestParseCUDAFileBackend(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "splitkv.toml"), []byte("source = \"splitkv.cu\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name = \"x\"\n[[backends]]\nname = \"splitkv\"\ncuda = \"splitkv.toml\"\n" + validSweep
	s, err := Parse(filepath.Join(dir, "suite.toml"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []BackendSelection{{Name: "splitkv", Line: 3, CUDA: filepath.Join(dir, "splitkv.toml"), Tunables: map[string][]string{}}}
	if !reflect.DeepEqual(s.Backends, want) {
		t.Errorf("backends\n got %+v\nwant %+v", s.Backends, want)
	}
}

func TestDuplicateCaseWarns(t *testing.T) {
	s, err := Parse("dup.toml", []byte(`name = "dup"
[[sweeps]]
batch = [1]
heads = [2]
seq_q = [64, 128]
head_dim = [32]
[[cases]]
batch = 1
heads = 2
seq_q = 64
head_dim = 32
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"case b1-h2-s64-d32-fp16 is defined 2 times (its sweeps and cases overlap); it runs once"}
	if len(s.Cases) != 2 || !slices.Equal(s.Warnings, want) {
		t.Errorf("cases %d, warnings %q; want 2 cases and %q", len(s.Cases), s.Warnings, want)
	}
}

// TestMaskAxesLeftOutAtDefaults: attention's mask axes are absent from a
// case's params at their defaults, left out or written, so that the cases
// of suites written before them keep their params and IDs.
func TestMaskAxesLeftOutAtDefaults(t *testing.T) {
	doc := `name = "masks"
[[sweeps]]
batch = [1]
heads = [4]
seq_q = [64]
seq_k = [256]
head_dim = [32]
causal = [true]
causal_align = ["top-left", "bottom-right"]
window_left = [-1, 32]
softcap = [0]
`
	s, err := Parse("masks.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
		for _, axis := range []string{"window_right", "softcap"} {
			if v, set := c.Params[axis]; set {
				t.Errorf("%s: %s = %q is in the params at its default", c.ID, axis, v)
			}
		}
	}
	want := []string{"b1-h4-s64-sk256-d32-fp16-causal", "b1-h4-s64-sk256-d32-fp16-causal-w32",
		"b1-h4-s64-sk256-d32-fp16-causal-br", "b1-h4-s64-sk256-d32-fp16-causal-br-w32"}
	if !slices.Equal(ids, want) {
		t.Errorf("IDs %q, want %q", ids, want)
	}
	if _, set := s.Cases[0].Params["causal_align"]; set || s.Cases[2].Params["causal_align"] != "bottom-right" {
		t.Errorf("causal_align: %v and %v, want absent at top-left and set at bottom-right", s.Cases[0].Params, s.Cases[2].Params)
	}
}
