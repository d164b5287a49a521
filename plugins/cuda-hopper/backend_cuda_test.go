//go:build cuda

package cudahopper

import (
	"testing"

	"github.com/flashcore/bench/cudakit/cudatest"
	_ "github.com/flashcore/bench/cudakit/gpu/gputest" // skip the binary without a GPU
)

// Output correctness, refusals and sampling are checked by TestConformance
// on the plugin binary; this logs kernel times, in process.
func TestTimingOnGPU(t *testing.T) {
	cudatest.Timing(t, New(), tunables)
}
