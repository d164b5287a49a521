//go:build cuda

package cudafile

import (
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/cudakit/cudatest"
	_ "github.com/flashcore/bench/cudakit/gpu/gputest" // skip the binary without a GPU
	"github.com/flashcore/bench/internal/cudafile"
)

// Output correctness, refusals and sampling are checked by TestConformance
// on the plugin binary; this logs the example's kernel times, in process
// (the first Prepare of each SPLITS value compiles it).
func TestTimingOnGPU(t *testing.T) {
	spec, err := cudafile.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	cudatest.Timing(t, newBackend(host.CUDAFileArgs("splitkv", example)), spec.Tunables)
}
