package triton

import (
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestConformance checks the plugin binary against the host–plugin
// contract, started through go-plugin exactly as flashcore starts it.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.RequireTorch(t)
	conformance.Run(t, conformance.Options{Binary: bridgetest.Plugin(t, "triton")})
}
