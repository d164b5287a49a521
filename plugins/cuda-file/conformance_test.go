package main

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/internal/cudabackend/cudatest"
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
	_, here, _, _ := runtime.Caller(0)
	opts := cudatest.Conformance(t, "cuda-file")
	opts.CUDAFile = filepath.Join(filepath.Dir(here), "..", "..", "examples", "cuda", "splitkv.toml")
	conformance.Run(t, opts)
}
