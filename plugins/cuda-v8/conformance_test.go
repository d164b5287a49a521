package main

import (
	"testing"

	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/conformance"
)

// TestConformance checks the plugin binary against the host–plugin
// contract through go-plugin, as flashcore starts it. Where the binary has
// no GPU to run on (or was built without CUDA), the check is skipped with
// the plugin's own reason.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	conformance.Run(t, conformance.Options{Binary: buildtest.Plugin(t, "cuda-v8", "plugins/cuda-v8")})
}
