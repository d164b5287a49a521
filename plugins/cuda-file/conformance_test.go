package cudafile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit/cudatest"
)

// TestConformance runs the split-KV example of examples/cuda through this
// plugin, started as flashcore starts a backend named by a CUDA-file spec,
// against the host–plugin contract: outputs against the fp64 reference on
// cases derived from the spec's capabilities and every value of SPLITS,
// refusals, facts and samples. Without a GPU (or built without CUDA) it is
// skipped with the plugin's own reason.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	opts := cudatest.Conformance(t, "cuda-file")
	opts.CUDAFile = exampleSpec(t)
	conformance.Run(t, opts)
}

// exampleSpec is the example's spec: in the checkout (go test runs in this
// folder), or in the dist/ folder that $FLASHCORE_BIN names (a compiled
// test binary on a GPU machine, scripts/gpu-conformance.sh).
func exampleSpec(t *testing.T) string {
	t.Helper()
	places := []string{example}
	if dir := os.Getenv("FLASHCORE_BIN"); dir != "" {
		places = append(places, filepath.Join(dir, "examples", "cuda", "splitkv.toml"))
	}
	for _, p := range places {
		if _, err := os.Stat(p); err == nil {
			abs, err := filepath.Abs(p)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	t.Fatalf("examples/cuda/splitkv.toml is in none of %q", places)
	return ""
}
