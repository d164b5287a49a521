package cudafile

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// example is the spec of examples/cuda, the walk-through's kernel.
const example = "../../examples/cuda/splitkv.toml"

func TestFormulas(t *testing.T) {
	vars := map[string]int64{"B": 2, "H": 8, "Sq": 77, "Sk": 131, "D": 64, "SPLITS": 4}
	known := func(n string) bool { _, ok := vars[n]; return ok }
	tests := []struct {
		text string
		want int64
		err  string
	}{
		{"ceil(Sq/64)", 2, ""},
		{"floor(Sq/64)", 1, ""},
		{"cdiv(Sk, 32)", 5, ""},
		{"B*H", 16, ""},
		{"4 * B*H*Sq * SPLITS * D", 4 * 2 * 8 * 77 * 4 * 64, ""},
		{"max(Sq, Sk) - min(Sq, Sk) % 7", 131 - 0, ""},
		{"-(1 - Sq) + 2*(3+4)", 76 + 14, ""},
		{"Sq/64", 0, `"Sq/64" is 77/64, not a whole number: round it with ceil() or floor()`},
		{"Sq/(H-8)", 0, `"Sq/(H-8)": division by zero`},
		{"Sq * width", 0, `"Sq * width": unknown name width`},
		{"round(Sq)", 0, `"round(Sq)": unknown function round (there are ceil, floor, min, max, cdiv)`},
		{"ceil(Sq, 2)", 0, `"ceil(Sq, 2)": ceil takes 1 argument(s), got 2`},
		{"4 * (B", 0, `"4 * (B": missing )`},
		{"4 *", 0, `"4 *": ends too early`},
		{"B H", 0, `"B H": unexpected "H"`},
	}
	for _, tc := range tests {
		f, err := ParseFormula(tc.text, known)
		var got int64
		if err == nil {
			got, err = f.Eval(vars)
		}
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: %v, want error %q", tc.text, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s = %d, %v; want %d", tc.text, got, err, tc.want)
		}
	}
}

func TestExampleSpec(t *testing.T) {
	spec, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Variant("splitkv")
	c := v.Capabilities
	if len(c.DTypes) != 2 || len(c.HeadDims) != 2 || !c.Causal || !c.NonCausal || !c.GroupedQueryHeads || !c.UnequalSeqLens || !c.NeedsGPU {
		t.Errorf("capabilities %+v", c)
	}
	if len(v.Tunables) != 1 || v.Tunables[0].Default != "4" {
		t.Errorf("tunables %+v", v.Tunables)
	}
	shape := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 77, SeqK: 131, HeadDim: 128, DType: sdk.BF16, Causal: true}
	l, err := spec.Plan(shape, map[string]string{"SPLITS": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if l.Function != "splitkv_bf16_d128" || l.Grid != (gpu.Dim3{X: 20, Y: 8, Z: 8}) || l.Block != (gpu.Dim3{X: 128, Y: 1, Z: 1}) {
		t.Errorf("split launch %s %+v %+v", l.Function, l.Grid, l.Block)
	}
	wantScratch := []cudakit.Scratch{{Name: "part_o", Bytes: 4 * 8 * 77 * 8 * 128}, {Name: "part_ml", Bytes: 8 * 8 * 77 * 8, Reset: true}}
	if len(l.Scratch) != 2 || l.Scratch[0] != wantScratch[0] || l.Scratch[1] != wantScratch[1] {
		t.Errorf("scratch %+v, want %+v", l.Scratch, wantScratch)
	}
	wantParams := []cudakit.Param{cudakit.BufferParam("q"), cudakit.BufferParam("k"), cudakit.BufferParam("v"),
		cudakit.BufferParam("part_o"), cudakit.BufferParam("part_ml"), cudakit.ValueParam(gpu.Int32(4)),
		cudakit.ValueParam(gpu.Int32(2)), cudakit.ValueParam(gpu.Int32(77)), cudakit.ValueParam(gpu.Int32(131)),
		cudakit.ValueParam(gpu.Int32(1)), cudakit.ValueParam(gpu.Float32(float32(shape.Scale() * 1.4426950408889634)))}
	if len(l.Params) != len(wantParams) {
		t.Fatalf("params %+v", l.Params)
	}
	for i := range wantParams {
		if l.Params[i] != wantParams[i] {
			t.Errorf("param %d = %+v, want %+v", i, l.Params[i], wantParams[i])
		}
	}
	if len(l.Then) != 1 || l.Then[0].Function != "combine_bf16_d128" || l.Then[0].Grid != (gpu.Dim3{X: 20, Y: 8, Z: 1}) || len(l.Then[0].Params) != 4 {
		t.Errorf("combine launch %+v", l.Then)
	}
}

func TestParamTypes(t *testing.T) {
	known := map[string]bool{"Sk": true, "H": true, "Sq": true, "D": true, "lse": false}
	shape := sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 64, SeqK: 64, HeadDim: 64, DType: sdk.FP16}
	vars, _ := shapeVars(shape, nil)
	tests := []struct {
		text string
		want cudakit.Param
	}{
		{"lse", cudakit.BufferParam("lse")},
		{"scale", cudakit.ValueParam(gpu.Float32(0.125))},
		{"scale:f64", cudakit.ValueParam(gpu.Float64(0.125))},
		{"cdiv(Sk, 32)", cudakit.ValueParam(gpu.Int32(2))},
		{"H*Sq*D:i64", cudakit.ValueParam(gpu.Int64(2 * 64 * 64))},
	}
	for _, tc := range tests {
		p, err := parseParam(tc.text, known, tensorParams)
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		got, err := p.arg(shape, vars)
		if err != nil || got != tc.want {
			t.Errorf("%s = %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
}

// Every problem of a bad spec is reported at once, each with the file, the
// line and the key; the messages are what a user sees.
func TestSpecErrorsGolden(t *testing.T) {
	paths, _ := filepath.Glob("testdata/bad/*.toml")
	var b strings.Builder
	for _, path := range paths {
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: no error", path)
			continue
		}
		b.WriteString(err.Error() + "\n\n")
	}
	checkGolden(t, "testdata/errors.golden", b.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
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
		_ = os.WriteFile(path+".got", []byte(got), 0o644)
		t.Errorf("%s differs from the output; see %s.got (go test -update rewrites it)", path, path)
	}
}

// A formula that does not evaluate for a case is the spec's fault: an
// invalid plan (an ERROR row), not a case the backend cannot run.
func TestPlanErrorsAreInvalidPlans(t *testing.T) {
	doc := `source = "splitkv.cu"
[capabilities]
dtypes = ["fp16"]
[[kernels]]
entry = "k"
grid = ["Sq/64"]
block = [128]
params = ["q"]
`
	spec, err := Parse("../../examples/cuda/bad.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = spec.Plan(sdk.Shape{Batch: 1, Heads: 1, KVHeads: 1, SeqQ: 77, SeqK: 77, HeadDim: 64, DType: sdk.FP16}, nil)
	if !errors.Is(err, cudakit.ErrInvalidPlan) || !strings.Contains(err.Error(), `kernel 1 (k): grid: "Sq/64" is 77/64, not a whole number`) {
		t.Errorf("Plan: %v", err)
	}
}

// The kernel with its own conventions: a mangled symbol, its own order,
// literal and formula integers, the natural-log scale, l and m reset to 0
// and -inf and O to 0 before every call.
func TestTiledExampleSpec(t *testing.T) {
	spec, err := Load("../../examples/cuda/tiled_fp32.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c := spec.Capabilities; c.SeqMultiple != 32 || c.Causal || !c.NonCausal || c.GroupedQueryHeads || c.UnequalSeqLens {
		t.Errorf("capabilities %+v", c)
	}
	shape := sdk.Shape{Batch: 2, Heads: 3, KVHeads: 3, SeqQ: 96, SeqK: 96, HeadDim: 64, DType: sdk.FP32}
	l, err := spec.Plan(shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if l.Grid != (gpu.Dim3{X: 2, Y: 3, Z: 1}) || l.Block != (gpu.Dim3{X: 32, Y: 1, Z: 1}) || l.DynamicSharedBytes != 4*(3*32*64+32*32) {
		t.Errorf("launch %+v", l)
	}
	if !l.OutputReset || l.OutputWord != 0 {
		t.Errorf("output reset %v %#x", l.OutputReset, l.OutputWord)
	}
	want := []cudakit.Scratch{{Name: "l", Bytes: 4 * 6 * 96, Reset: true}, {Name: "m", Bytes: 4 * 6 * 96, Reset: true, Word: 0xff800000}}
	if len(l.Scratch) != 2 || l.Scratch[0] != want[0] || l.Scratch[1] != want[1] {
		t.Errorf("scratch %+v, want %+v", l.Scratch, want)
	}
	ints := map[int]int32{3: 96, 4: 64, 5: 3, 6: 3, 7: 32, 8: 32}
	for i, n := range ints {
		if l.Params[i] != cudakit.ValueParam(gpu.Int32(n)) {
			t.Errorf("param %d = %+v, want %d", i, l.Params[i], n)
		}
	}
	if l.Params[9] != cudakit.ValueParam(gpu.Float32(0.125)) || l.Params[12] != cudakit.BufferParam("o") {
		t.Errorf("params %+v", l.Params)
	}
}

// The backward example: [backward] kernels make the variant run mode
// bwd, and a bwd case plans to the backward's launches, dK and dV first,
// their params naming the backward's tensors.
func TestBackwardExampleSpec(t *testing.T) {
	spec, err := Load("../../examples/cuda/backward/attention_backward.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Capabilities.RunsMode(sdk.Backward) || spec.Capabilities.RunsMode(sdk.ForwardBackward) {
		t.Errorf("modes %v, want fwd and bwd", spec.Capabilities.Modes)
	}
	shape := sdk.Shape{Batch: 2, Heads: 8, KVHeads: 2, SeqQ: 300, SeqK: 517, HeadDim: 64, DType: sdk.FP16, Causal: true, Mode: sdk.Backward}
	l, err := spec.BackwardPlan(cudakit.OpCase{Op: "attention", Params: attention.ParamsOf(shape)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "my_attention_bwd_dkdv_d64" || len(l.Then) != 1 || l.Then[0].Function != "my_attention_bwd_dq_d64" {
		t.Fatalf("launches %s then %v", l.Function, l.Then)
	}
	if l.Grid != (gpu.Dim3{X: 130, Y: 4, Z: 1}) || l.Then[0].Grid != (gpu.Dim3{X: 75, Y: 16, Z: 1}) {
		t.Errorf("grids %v and %v, want cdiv(517, 4) × B·H_kv and cdiv(300, 4) × B·H", l.Grid, l.Then[0].Grid)
	}
	var buffers []string
	for _, p := range l.Params {
		if p.Buffer != "" {
			buffers = append(buffers, p.Buffer)
		}
	}
	if want := []string{"q", "k", "v", "o", "do", "lse", "dk", "dv"}; !slices.Equal(buffers, want) {
		t.Errorf("dK/dV buffers %v, want %v", buffers, want)
	}
	forward, err := spec.Plan(shape, nil)
	if err != nil || forward.Function != "my_attention_d64" {
		t.Errorf("forward plan %s, %v", forward.Function, err)
	}
}

// The backward's tensors are params of [backward] kernels alone, and its
// scratch may not take their names.
func TestBackwardTensorsBelongToTheBackward(t *testing.T) {
	doc := `source = "splitkv.cu"
[capabilities]
dtypes = ["fp16"]
[[kernels]]
entry = "k"
grid = [1]
block = [32]
params = ["q", "dq"]
[[backward.scratch]]
name = "lse"
bytes = 4
[[backward.kernels]]
entry = "b"
grid = [1]
block = [32]
params = ["dq", "dk", "dv", "lse", "do"]
`
	_, err := Parse("../../examples/cuda/bad.toml", []byte(doc))
	for _, want := range []string{`key "kernels.params": param "dq"`, `key "backward.scratch.name": "lse" is taken`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v, want an error containing %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "backward.kernels.params") {
		t.Errorf("Parse: %v: the backward's kernels may name its tensors", err)
	}
}
