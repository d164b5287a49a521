package flashinfer

import (
	"testing"

	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// Where the library is not installed (the CI, a CPU machine), the plugin
// binary describes itself as unavailable, naming the command that
// installs it, as flashcore list shows it.
func TestUnavailableNamesTheInstallCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bridgetest.CheckUnavailableNamesInstall(t, "flashinfer", "flashinfer")
}
