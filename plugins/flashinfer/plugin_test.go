package flashinfer

import (
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// Where the library is not installed (the CI, a CPU machine), the plugin
// binary describes itself as unavailable, naming the command that
// installs it, as flashcore list shows it.
func TestUnavailableNamesTheInstallCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.RequireTorch(t)
	backend := bridgetest.StartPlugin(t, bridgetest.Plugin(t, "flashinfer"))
	d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if d.Available {
		t.Skipf("flashinfer is installed here (version %s)", d.Version)
	}
	for _, want := range []string{"is not installed for ", "`make setup EXTRAS=flashinfer`", "scripts/extras.py"} {
		if !strings.Contains(d.UnavailableReason, want) {
			t.Errorf("unavailable reason %q lacks %q", d.UnavailableReason, want)
		}
	}
}
