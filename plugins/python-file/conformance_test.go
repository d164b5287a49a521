package pythonfile

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestConformance runs the plain torch example of examples/python through
// this plugin, started as flashcore starts a backend named by a Python
// file, against the host–plugin contract.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.RequireTorch(t)
	_, here, _, _ := runtime.Caller(0)
	example := filepath.Join(filepath.Dir(here), "..", "..", "examples", "python", "torch_attention.py")
	conformance.Run(t, conformance.Options{
		Binary:             bridgetest.Plugin(t, "python-file"),
		PythonFile:         example,
		MaxCasesPerVariant: 6,
	})
}
