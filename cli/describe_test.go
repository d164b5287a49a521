package cli

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
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
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference"})
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
}
