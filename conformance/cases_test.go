package conformance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Declarations of the kinds the plugins make.
var (
	cudaLike = sdk.Variant{Name: "cuda-like", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, HeadDims: []int{64, 128},
		Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true, NeedsGPU: true},
		Tunables: []sdk.Tunable{{Name: "tile_n", Values: []string{"32", "64"}, Default: "32"}}}
	everything = sdk.Variant{Name: "everything", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
		Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true}}
	interpreter = sdk.Variant{Name: "interpreter", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16, sdk.FP32}, HeadDims: []int{64, 128},
		Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true,
		MaxSeqLen: 256, MaxElements: 1 << 16}}
	causalOnly = sdk.Variant{Name: "causal-only", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16}, HeadDims: []int{64}, Causal: true}}
	noGQA = sdk.Variant{Name: "no-gqa", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}, Causal: true, NonCausal: true, UnequalSeqLens: true}}
	// wholeTiles is a kernel that masks no partial tile, as many public
	// kernels are: fp32, one head dim, no masking, lengths in 32s.
	wholeTiles = sdk.Variant{Name: "whole-tiles", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP32}, HeadDims: []int{64}, NonCausal: true, SeqMultiple: 32}}
	// trainer runs every mode, with a tunable, as the cpu-reference does.
	trainer = sdk.Variant{Name: "trainer", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, HeadDims: []int{64, 128},
		Causal: true, NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true,
		Modes: []sdk.Mode{sdk.Forward, sdk.Backward, sdk.ForwardBackward}},
		Tunables: []sdk.Tunable{{Name: "block", Values: []string{"32", "64"}, Default: "64"}}}
	// backwardOnly is a backward kernel alone, causal, without GQA.
	backwardOnly = sdk.Variant{Name: "backward-only", Capabilities: sdk.Capabilities{
		DTypes: []sdk.DType{sdk.BF16}, HeadDims: []int{128}, Causal: true, UnequalSeqLens: true,
		Modes: []sdk.Mode{sdk.Backward}}}
)

var declarations = []sdk.Variant{cudaLike, everything, interpreter, causalOnly, noGQA, wholeTiles, trainer, backwardOnly}

// Every case lies inside the declaration, and together the cases use every
// declared dtype, head dim and ability.
func TestCasesStayInsideAndCoverTheDeclaration(t *testing.T) {
	for _, v := range declarations {
		t.Run(v.Name, func(t *testing.T) {
			caps := v.Capabilities
			cases := Cases(v)
			seen := map[string]bool{}
			for _, c := range cases {
				if reason := caps.Unsupported(attention.ShapeOf(c.Case)); reason != "" {
					t.Errorf("%s lies outside the declaration: %s", c.Name(), reason)
				}
				if seen[c.Name()] {
					t.Errorf("%s twice", c.Name())
				}
				seen[c.Name()] = true
			}
			for _, want := range wantedFeatures(v) {
				if !slices.ContainsFunc(cases, want.in) {
					t.Errorf("no case has %s", want.name)
				}
			}
		})
	}
}

type feature struct {
	name string
	in   func(Case) bool
}

// wantedFeatures are what the cases of v must show: each declared dtype and
// head dim, each declared masking, GQA and Sq on either side of Sk when
// declared, a length no tile divides, one query row, and each non-default
// tunable value.
func wantedFeatures(v sdk.Variant) []feature {
	caps := v.Capabilities
	var want []feature
	add := func(name string, in func(Case) bool) { want = append(want, feature{name, in}) }
	for _, dtype := range caps.DTypes {
		add("dtype "+string(dtype), func(c Case) bool { return attention.ShapeOf(c.Case).DType == dtype })
	}
	for _, d := range caps.HeadDims {
		add(fmt.Sprint("head dim ", d), func(c Case) bool { return attention.ShapeOf(c.Case).HeadDim == d })
	}
	if caps.Causal {
		add("causal masking", func(c Case) bool { return attention.ShapeOf(c.Case).Causal })
	}
	if caps.NonCausal {
		add("no masking", func(c Case) bool { return !attention.ShapeOf(c.Case).Causal })
	}
	if caps.GroupedQueryHeads {
		add("grouped-query heads", func(c Case) bool { return attention.ShapeOf(c.Case).KVHeads < attention.ShapeOf(c.Case).Heads })
	}
	if caps.UnequalSeqLens {
		add("Sq < Sk", func(c Case) bool { return attention.ShapeOf(c.Case).SeqQ < attention.ShapeOf(c.Case).SeqK })
		add("Sq > Sk causal", func(c Case) bool {
			return attention.ShapeOf(c.Case).SeqQ > attention.ShapeOf(c.Case).SeqK && attention.ShapeOf(c.Case).Causal == caps.Causal
		})
		add("one query row", func(c Case) bool { return attention.ShapeOf(c.Case).SeqQ == 1 })
	}
	if m := caps.SeqMultiple; m > 1 {
		add(fmt.Sprint("a length of more than one tile of ", m), func(c Case) bool { return attention.ShapeOf(c.Case).SeqQ > m })
	} else {
		add("a length no tile of 16 divides", func(c Case) bool { return attention.ShapeOf(c.Case).SeqQ%16 != 0 })
	}
	for _, tun := range v.Tunables {
		for _, value := range tun.Values {
			if value != tun.Default {
				add(tun.Name+"="+value, func(c Case) bool { return c.Tunables[tun.Name] == value })
			}
		}
	}
	for _, mode := range sdk.Modes {
		if caps.RunsMode(mode) {
			add("mode "+string(mode), func(c Case) bool { return attention.ShapeOf(c.Case).Mode.Or() == mode })
		}
	}
	for _, mode := range backwardModes(caps) {
		for _, dtype := range caps.DTypes {
			add(fmt.Sprintf("mode %s in %s", mode, dtype), func(c Case) bool {
				s := attention.ShapeOf(c.Case)
				return s.Mode == mode && s.DType == dtype
			})
		}
		if caps.GroupedQueryHeads && caps.Causal && caps.UnequalSeqLens {
			add(fmt.Sprintf("mode %s with GQA, causal, Sq != Sk", mode), func(c Case) bool {
				s := attention.ShapeOf(c.Case)
				return s.Mode == mode && s.KVHeads < s.Heads && s.Causal && s.SeqQ != s.SeqK
			})
		}
	}
	return want
}

// Each refusal lies outside the declaration in the one respect it names;
// a declaration with nothing outside it gets none.
func TestUndeclaredLieOutside(t *testing.T) {
	want := map[string][]string{
		"cuda-like":     {"dtype fp32", "mode bwd", "head dim 96"},
		"everything":    {"mode bwd"},
		"interpreter":   {"dtype bf16", "mode bwd", "head dim 96", "sequence length 257", "more than 65536 elements"},
		"causal-only":   {"dtype bf16", "mode bwd", "head dim 96", "no masking", "grouped-query heads", "Sq != Sk"},
		"no-gqa":        {"mode bwd", "grouped-query heads"},
		"whole-tiles":   {"dtype fp16", "mode bwd", "head dim 96", "causal masking", "grouped-query heads", "Sq != Sk", "sequence length not a multiple of 32"},
		"trainer":       {"dtype fp32", "head dim 96"},
		"backward-only": {"dtype fp16", "mode fwd", "head dim 96", "no masking", "grouped-query heads"},
	}
	for _, v := range declarations {
		t.Run(v.Name, func(t *testing.T) {
			var whys []string
			for _, r := range Undeclared(v) {
				whys = append(whys, r.Why)
				if caps := v.Capabilities; caps.Unsupported(r.Shape) == "" {
					t.Errorf("%s: %s lies inside the declaration", r.Why, r.Shape)
				}
			}
			if !slices.Equal(whys, want[v.Name]) {
				t.Errorf("refusals %q, want %q", whys, want[v.Name])
			}
		})
	}
}

// The cases and refusals a user sees in go test -v, per declaration: a
// change to the derivation shows up here.
func TestCasesGolden(t *testing.T) {
	var b strings.Builder
	for _, v := range declarations {
		fmt.Fprintf(&b, "%s:\n", v.Name)
		for _, c := range Cases(v) {
			fmt.Fprintf(&b, "  %s\n", c.Name())
		}
		for _, r := range Undeclared(v) {
			fmt.Fprintf(&b, "  refuses %s: %s\n", r.Why, r.Shape)
		}
	}
	checkGolden(t, "cases.golden", b.String())
}

func TestCombinations(t *testing.T) {
	tunables := []sdk.Tunable{
		{Name: "a", Values: []string{"1", "2"}, Default: "1"},
		{Name: "b", Values: []string{"x", "y", "z"}, Default: "x"},
	}
	combos := Combinations(tunables)
	if len(combos) != 6 || combos[0]["a"] != "1" || combos[0]["b"] != "x" || combos[5]["a"] != "2" || combos[5]["b"] != "z" {
		t.Errorf("Combinations = %v, want the 6 of a×b, first values first", combos)
	}
	if n := len(Combinations(nil)); n != 1 {
		t.Errorf("%d combinations of no tunables, want 1 (the defaults)", n)
	}
}

// A tunable of another op is not swept over attention's cases: a request
// naming it would be refused (sdk.ResolveTunables). Attention's own still
// is.
func TestCasesSweepOnlyAttentionsTunables(t *testing.T) {
	v := cudaLike
	v.Ops = []string{"attention", "rmsnorm"}
	v.Tunables = []sdk.Tunable{
		{Name: "tile_n", Values: []string{"32", "64"}, Default: "32", Ops: []string{"attention"}},
		{Name: "vec", Values: []string{"1", "4", "8"}, Default: "8", Ops: []string{"rmsnorm"}},
	}
	swept := 0
	for _, c := range Cases(v) {
		if _, ok := c.Tunables["vec"]; ok {
			t.Errorf("%s: an attention case with rmsnorm's tunable", c.Name())
		}
		if c.Tunables["tile_n"] == "64" {
			swept++
		}
	}
	if swept == 0 {
		t.Error("attention's own tunable is not swept")
	}
	if got := TunablesOf(v.Tunables, "rmsnorm"); len(got) != 1 || got[0].Name != "vec" {
		t.Errorf("TunablesOf(rmsnorm) = %v, want vec alone", got)
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		gotPath := path + ".got"
		_ = os.WriteFile(gotPath, []byte(got), 0o644)
		t.Errorf("%s differs from the output; see %s (go test -update rewrites it)", path, gotPath)
	}
}

// A search-sized space is checked one value at a time: every value once,
// the others at their defaults, not the whole product.
func TestLargeSpacesAreCoveredOneValueAtATime(t *testing.T) {
	var tunables []sdk.Tunable
	for _, name := range []string{"a", "b", "c"} {
		tunables = append(tunables, sdk.Tunable{Name: name, Values: []string{"1", "2", "3", "4"}, Default: "2"})
	}
	combos := coveringCombinations(tunables)
	if len(combos) != 9 {
		t.Fatalf("%d combinations of a 64-configuration space, want 9 (3 non-default values of each of 3 tunables)", len(combos))
	}
	for _, c := range combos {
		changed := 0
		for _, tun := range tunables {
			if c[tun.Name] != tun.Default {
				changed++
			}
		}
		if changed != 1 {
			t.Errorf("%v changes %d tunables from their defaults, want 1", c, changed)
		}
	}
	if n := len(coveringCombinations(tunables[:2])); n != 16 {
		t.Errorf("a 16-configuration space gave %d combinations, want all 16", n)
	}
}

// A pinned pass sweeps what the pin leaves, in full where that space is
// small, and every case, the defaults' too, names the pin's values; a pin
// of a tunable or value the variant lacks is an error.
func TestPinnedCases(t *testing.T) {
	v := cudaLike
	v.Tunables = []sdk.Tunable{
		{Name: "kernel", Values: []string{"auto", "a", "b"}, Default: "auto"},
		{Name: "a_tile", Values: []string{"1", "2", "3", "4"}, Default: "1"},
		{Name: "a_stages", Values: []string{"2", "3"}, Default: "2"},
		{Name: "b_splits", Values: []string{"1", "2", "4", "8"}, Default: "1"},
		{Name: "b_tile", Values: []string{"64", "128"}, Default: "64"},
	}
	tests := []struct {
		name   string
		pin    map[string]string
		combos int // distinct tunable maps among the cases
		err    string
	}{
		{"kernel a: a's 8 combinations", map[string]string{"kernel": "a", "b_splits": "1", "b_tile": "64"}, 8, ""},
		{"kernel b: b's 8 combinations", map[string]string{"kernel": "b", "a_tile": "1", "a_stages": "2"}, 8, ""},
		{"a pin of no tunable", map[string]string{"kernel": "a", "tma": "on"}, 0, "has no attention tunable tma"},
		{"a pin of no value", map[string]string{"kernel": "c"}, 0, "not among the tunable's values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := PinnedCases(v, tc.pin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("PinnedCases = %d cases, %v; want an error with %q", len(cases), err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, c := range cases {
				for name, value := range tc.pin {
					if c.Tunables[name] != value {
						t.Errorf("%s: %s=%q, want the pin's %q", c.Name(), name, c.Tunables[name], value)
					}
				}
				seen[fmt.Sprint(c.Tunables)] = true
			}
			if len(seen) != tc.combos {
				t.Errorf("%d distinct tunable maps, want %d: %v", len(seen), tc.combos, seen)
			}
		})
	}
}

// TestShapeCases: a backend's own shapes come in every combination of the
// pass's tunables, the defaults' included, with the pin held; a large space
// is covered one value at a time; a shape outside the declaration is an
// error.
func TestShapeCases(t *testing.T) {
	v := cudaLike
	v.Tunables = []sdk.Tunable{
		{Name: "kernel", Values: []string{"a", "b"}, Default: "a"},
		{Name: "tile", Values: []string{"64", "128"}, Default: "64"},
		{Name: "stages", Values: []string{"2", "3"}, Default: "2"},
	}
	many := v
	many.Name = "many"
	many.Tunables = []sdk.Tunable{
		{Name: "x", Values: []string{"1", "2", "3", "4", "5", "6"}, Default: "1"},
		{Name: "y", Values: []string{"1", "2", "3", "4", "5", "6"}, Default: "1"},
	}
	persistent := sdk.Shape{Batch: 4, Heads: 32, KVHeads: 8, SeqQ: 640, SeqK: 640, HeadDim: 64, DType: sdk.FP16, Causal: true}
	decode := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 1, SeqQ: 1, SeqK: 300, HeadDim: 128, DType: sdk.BF16}
	fp32 := persistent
	fp32.DType = sdk.FP32
	tests := []struct {
		name   string
		v      sdk.Variant
		pin    map[string]string
		shapes []sdk.Shape
		want   []string // the cases' names, where the test lists them
		count  int      // how many cases
		err    string
	}{
		{"no shapes", v, map[string]string{"kernel": "b"}, nil, nil, 0, ""},
		{"a pin: the other tunables' 4 combinations", v, map[string]string{"kernel": "b"}, []sdk.Shape{persistent}, []string{
			"b4-h32-kv8-s640-d64-fp16-causal kernel=b stages=2 tile=128",
			"b4-h32-kv8-s640-d64-fp16-causal kernel=b stages=2 tile=64",
			"b4-h32-kv8-s640-d64-fp16-causal kernel=b stages=3 tile=128",
			"b4-h32-kv8-s640-d64-fp16-causal kernel=b stages=3 tile=64",
		}, 4, ""},
		{"no pin, two shapes: 8 combinations each", v, nil, []sdk.Shape{persistent, decode}, nil, 16, ""},
		{"a large space: the defaults, then one value at a time", many, nil, []sdk.Shape{decode}, nil, 11, ""},
		{"outside the declaration", v, nil, []sdk.Shape{fp32}, nil, 0, "outside cuda-like's capabilities"},
		{"a pin of no value", v, map[string]string{"kernel": "c"}, []sdk.Shape{persistent}, nil, 0, "not among the tunable's values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := ShapeCases(tc.v, tc.pin, tc.shapes)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ShapeCases = %d cases, %v; want an error with %q", len(cases), err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			seen := map[string]bool{}
			for _, c := range cases {
				names = append(names, c.Name())
				if seen[c.Name()] {
					t.Errorf("%s twice", c.Name())
				}
				seen[c.Name()] = true
				for name, value := range tc.pin {
					if c.Tunables[name] != value {
						t.Errorf("%s: %s=%q, want the pin's %q", c.Name(), name, c.Tunables[name], value)
					}
				}
			}
			if len(cases) != tc.count {
				t.Errorf("%d cases, want %d: %q", len(cases), tc.count, names)
			}
			if tc.want != nil {
				slices.Sort(names)
				if !slices.Equal(names, tc.want) {
					t.Errorf("cases %q, want %q", names, tc.want)
				}
			}
			if tc.v.Name == many.Name && len(cases) > 0 && (cases[0].Tunables["x"] != "1" || cases[0].Tunables["y"] != "1") {
				t.Errorf("first case %s, want the defaults", cases[0].Name())
			}
		})
	}
}

// TestCapabilityProblems: each op a variant runs is held to its own
// capabilities, and capabilities of an op the variant does not list are
// a mistake.
func TestCapabilityProblems(t *testing.T) {
	attentionCaps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16}, Causal: true}
	normCaps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP32}}
	tests := []struct {
		name    string
		variant sdk.Variant
		want    int
	}{
		{"attention alone", sdk.Variant{Name: "a", Capabilities: attentionCaps}, 0},
		{"per-op capabilities", sdk.Variant{Name: "a", Ops: []string{"attention", "rmsnorm"}, Capabilities: attentionCaps,
			OpCapabilities: map[string]sdk.Capabilities{"rmsnorm": normCaps}}, 0},
		{"rmsnorm alone needs no masking", sdk.Variant{Name: "a", Ops: []string{"rmsnorm"}, Capabilities: normCaps}, 0},
		{"attention without masking", sdk.Variant{Name: "a", Capabilities: normCaps}, 1},
		{"an op without dtypes", sdk.Variant{Name: "a", Ops: []string{"attention", "rmsnorm"}, Capabilities: attentionCaps,
			OpCapabilities: map[string]sdk.Capabilities{"rmsnorm": {}}}, 1},
		{"capabilities of an op not listed", sdk.Variant{Name: "a", Capabilities: attentionCaps,
			OpCapabilities: map[string]sdk.Capabilities{"rmsnorm": normCaps}}, 1},
		{"a tunable of one op", sdk.Variant{Name: "a", Ops: []string{"attention", "rmsnorm"}, Capabilities: attentionCaps,
			OpCapabilities: map[string]sdk.Capabilities{"rmsnorm": normCaps},
			Tunables:       []sdk.Tunable{{Name: "rows", Values: []string{"4"}, Default: "4", Ops: []string{"attention"}}}}, 0},
		{"a tunable of an op not listed", sdk.Variant{Name: "a", Capabilities: attentionCaps,
			Tunables: []sdk.Tunable{{Name: "rows", Values: []string{"4"}, Default: "4", Ops: []string{"rmsnorm"}}}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := capabilityProblems(tc.variant); len(got) != tc.want {
				t.Errorf("problems %v, want %d", got, tc.want)
			}
		})
	}
}
