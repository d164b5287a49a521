package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/internal/cudafile"
	"github.com/flashcore/bench/internal/nvcc"
	"github.com/flashcore/bench/sdk"
)

// A plugin that could not start (a CUDA build without a GPU) is described
// with the reason it gives no variants; a CUDA-file backend still shows
// what its spec declares.
func TestDescribeWithoutAStartedPlugin(t *testing.T) {
	down := sdk.Description{Name: "cuda-v8", UnavailableReason: "no CUDA device"}
	var b strings.Builder
	writeDescription(&b, host.Plugin{Name: "cuda-v8", Path: "/bin/p"}, withStaticVariants(host.Plugin{Name: "cuda-v8"}, down))
	if !strings.Contains(b.String(), "variants:  not known here: the plugin could not start") {
		t.Errorf("describe of a plugin that did not start:\n%s", b.String())
	}
	p := host.Plugin{Name: "splitkv", Path: "/bin/cuda-file", CUDAFile: "../examples/cuda/splitkv.toml"}
	b.Reset()
	writeDescription(&b, p, withStaticVariants(p, sdk.Description{Name: "splitkv", UnavailableReason: "no CUDA device"}))
	for _, want := range []string{"available: no (no CUDA device; the variant below is what the spec declares)", "variant splitkv",
		"dtypes:       fp16, bf16", "tunable SPLITS: 2|4|8 (default 4)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}

// TestDescribeTakesBackendsAsRunDoes: describe takes --backends, one or
// several, as run does, besides the positional name.
func TestDescribeTakesBackendsAsRunDoes(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir}
	stdout, stderr, code := runMain(t, env, "describe", "--backends", "cpu-reference")
	if code != ExitOK || !strings.Contains(stdout, "cpu-reference") {
		t.Fatalf("describe --backends cpu-reference: exit %d\n%s%s", code, stdout, stderr)
	}
	positional, _, _ := runMain(t, env, "describe", "cpu-reference")
	if stdout != positional {
		t.Errorf("describe --backends and describe NAME differ:\n%s\n---\n%s", stdout, positional)
	}
	if _, stderr, code := runMain(t, env, "describe", "--backends", "cpu-reference,nope"); code != ExitUsage || !strings.Contains(stderr, `backend "nope" not found`) {
		t.Errorf("an unknown backend: exit %d: %s", code, stderr)
	}
	// A spec with a mistake is a usage error, for describe as for run.
	spec := filepath.Join(t.TempDir(), "typo.toml")
	if err := os.WriteFile(spec, []byte("name = \"typo\"\nsource = \"typo.cu\"\n[[kernels]]\nentry = \"k<{nosuch}>\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"describe", "run"} {
		if _, stderr, code := runMain(t, env, cmd, "--backends", "cu:"+spec); code != ExitUsage || !strings.Contains(stderr, "typo.toml:") {
			t.Errorf("%s of a spec with a mistake: exit %d, want %d: %s", cmd, code, ExitUsage, stderr)
		}
	}
}

// describe of a cu: spec compiles its source with the pinned toolchain's
// nvcc, no GPU needed, and shows ptxas's report of every template
// instance; the golden file holds nvcc 13.5's numbers, so the test needs
// that toolchain (make cuda-toolchain) and skips without it.
func TestDescribeCompilesTheSpec(t *testing.T) {
	toolchain := nvcc.ToolchainDir()
	if toolchain == "" {
		t.Skip("no pinned CUDA toolchain (make cuda-toolchain fetches it)")
	}
	var b strings.Builder
	compiler := &cudafile.Compiler{NVCC: nvcc.InToolchain(toolchain), CacheDir: t.TempDir()}
	writeCompiled(&b, "../examples/cuda/templated_causal.toml", sdk.Device{}, compiler)
	golden(t, "describe-cu-templated-causal", b.String())
}

// End to end: flashcore describe cu:FILE, on this machine, shows each
// instance of the example with its registers.
func TestDescribeCUFileEndToEnd(t *testing.T) {
	if _, err := nvcc.Find(); err != nil {
		t.Skip(err)
	}
	dir := pluginDir(t, map[string]string{"cuda-file": "plugins/cuda-file/cmd/flashcore-backend-cuda-file"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir, "FLASHCORE_CACHE_DIR": t.TempDir()}
	stdout, stderr, code := runMain(t, env, "describe", "cu:../examples/cuda/templated_causal.toml")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 || !strings.HasPrefix(fields[0], "attn_fwd<") {
			continue
		}
		rows++
		if registers, err := strconv.Atoi(fields[3]); err != nil || registers <= 0 {
			t.Errorf("no register count in %q", line)
		}
	}
	if rows != 8 {
		t.Errorf("%d instances shown, want 8 (2 dtypes x 2 head dims x 2 maskings):\n%s", rows, stdout)
	}
}

// Without any nvcc, describe says so and how to get one.
func TestDescribeWithoutNVCC(t *testing.T) {
	var b strings.Builder
	t.Setenv("PATH", t.TempDir())
	t.Setenv("FLASHCORE_NVCC", "")
	t.Setenv("CUDA_HOME", t.TempDir())
	t.Setenv("CUDA_PATH", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, err := nvcc.Find(); err == nil {
		t.Skip("an nvcc outside the places this test empties (/usr/local/cuda)")
	}
	writeCompiled(&b, "../examples/cuda/templated_causal.toml", sdk.Device{}, &cudafile.Compiler{})
	if !strings.Contains(b.String(), "compiled:  no: no nvcc found") || !strings.Contains(b.String(), "make cuda-toolchain") {
		t.Errorf("describe without nvcc:\n%s", b.String())
	}
}

// A source that does not compile is shown with nvcc's first error, file
// and line.
func TestDescribeShowsTheCompileError(t *testing.T) {
	nvcc, err := nvcc.Find()
	if err != nil {
		t.Skip(err)
	}
	var b strings.Builder
	writeCompiled(&b, "../internal/cudafile/testdata/broken.toml", sdk.Device{}, &cudafile.Compiler{NVCC: nvcc, CacheDir: t.TempDir()})
	if !strings.Contains(b.String(), "compiled:  no: compile broken.cu for sm_90 failed (exit status 1): broken.cu:2: ") ||
		!strings.Contains(b.String(), `identifier "undefined_name" is undefined`) {
		t.Errorf("describe of a broken source:\n%s", b.String())
	}
}

// describe shows a variant of attention alone as it always has, and each
// op of a variant of several under its name, with the op's own
// capabilities: the fp32 that rmsnorm declares apart from attention, and
// for rmsnorm none of attention's fields; a tunable of some of the ops
// names them.
func TestDescribeShowsEachOpsCapabilities(t *testing.T) {
	attentionCaps := sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16}, HeadDims: []int{64, 128}, Causal: true,
		NonCausal: true, GroupedQueryHeads: true, UnequalSeqLens: true, NeedsGPU: true}
	variants := []sdk.Variant{
		{Name: "cuda-v8", Description: "attention alone", Capabilities: attentionCaps,
			Tunables: []sdk.Tunable{{Name: "tile_n", Values: []string{"32", "64"}, Default: "64"}}},
		{Name: "cuda-scalar", Description: "attention and rmsnorm", Ops: []string{"attention", "rmsnorm"}, Capabilities: attentionCaps,
			OpCapabilities: map[string]sdk.Capabilities{"rmsnorm": {DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}, NeedsGPU: true}},
			Tunables:       []sdk.Tunable{{Name: "rows_per_block", Values: []string{"4", "8", "16"}, Default: "8", Ops: []string{"attention"}}}},
		{Name: "torch-rmsnorm", Ops: []string{"rmsnorm"},
			Capabilities: sdk.Capabilities{DTypes: []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32}, MaxElements: 1 << 30}},
	}
	var b strings.Builder
	for _, v := range variants {
		writeVariant(&b, v)
	}
	golden(t, "describe-variants", b.String())
}
