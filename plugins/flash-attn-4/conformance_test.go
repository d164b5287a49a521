package flashattn4

import (
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestConformance checks the plugin binary against the host–plugin
// contract, started through go-plugin exactly as flashcore starts it. It
// skips, saying why, where flash-attn-4 is not installed or there is no
// GPU; the library decides at its first call whether it takes a case, so a
// skip inside the declared capabilities is allowed.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.RequireTorch(t)
	conformance.Run(t, conformance.Options{Binary: bridgetest.Plugin(t, "flash-attn-4"), RuntimeSkipsAllowed: true})
}
