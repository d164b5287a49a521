package pytorchsdpa

import (
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestConformance checks the plugin binary against the host–plugin
// contract, started through go-plugin exactly as flashcore starts it.
// PyTorch decides at run time whether a pinned SDPA backend takes a case,
// so a skip inside the declared capabilities is allowed.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.RequireTorch(t)
	conformance.Run(t, conformance.Options{Binary: bridgetest.Plugin(t, "pytorch-sdpa"), RuntimeSkipsAllowed: true})
}
