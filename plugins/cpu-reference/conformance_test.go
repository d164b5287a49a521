package cpureference

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flashcore/bench/conformance"
)

// TestConformance builds this plugin and checks the binary against the
// contract, started through go-plugin exactly as flashcore starts it: the
// hash echo, the poisoned and fully written output, sane samples, Release.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	conformance.Run(t, conformance.Options{Binary: buildPlugin(t)})
}

// buildPlugin builds this plugin's own main (the test runs in the plugin's
// folder; the main is in cmd/) under the name flashcore would look for.
func buildPlugin(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "flashcore-backend-"+backendName)
	build := exec.Command("go", "build", "-o", binary, "./cmd/flashcore-backend-"+backendName)
	if output, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, output)
	}
	return binary
}
