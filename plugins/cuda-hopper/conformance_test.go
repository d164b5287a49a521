package cudahopper

import (
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit/cudatest"
)

// TestConformance checks the plugin binary with the conformance kit,
// started through go-plugin as flashcore starts it: outputs against the
// fp64 reference with the default suite's tolerances, on cases derived from
// the declared capabilities and every tunable combination, refusals of what
// it did not declare, the facts and the samples. Where the binary has no
// GPU to run on (or was built without CUDA), it is skipped with the
// plugin's own reason.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	conformance.Run(t, cudatest.Conformance(t, "cuda-hopper"))
}
