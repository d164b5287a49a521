package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestDividedClockPyFileIsCaught runs testdata/liars/cpu.toml: a py: file
// that replaces the worker's Run, in its own Python process, with one that
// divides every time it reports by 8, and its honest twin. On a CPU the
// host's clock (its batch and marginal rules) or the CPU's ceiling refuses
// every row of the liar, at kernels of tens of milliseconds, even on cores loaded
// by a parallel go test, and the twin PASSes.
// On a GPU the timing audit is the check (scripts/gpu-audit.sh).
func TestDividedClockPyFileIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs torch")
	}
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("on a GPU machine the timing audit is the check (scripts/gpu-audit.sh)")
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file"})
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := runMain(t, quietTorch(plugins), "run", "--suite", "testdata/liars/cpu.toml", "--out", out)
	if code != ExitFailures {
		t.Errorf("exit %d, want %d (the liar's ERROR rows):\n%s", code, ExitFailures, stderr)
	}
	run, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	liar, honest := 0, 0
	for _, r := range run.Results {
		switch r.Backend {
		case "divided-clock":
			liar++
			if r.Status != results.StatusError || !strings.HasPrefix(r.Reason, "clock:") && !strings.HasPrefix(r.Reason, "implausible:") {
				t.Errorf("divided-clock %s: %s %q, want an ERROR by the host's clock or the ceiling", r.CaseID, r.Status, r.Reason)
			}
		case "honest-sdpa":
			honest++
			if r.Status != results.StatusPass {
				t.Errorf("honest-sdpa %s: %s %q, want PASS", r.CaseID, r.Status, r.Reason)
			}
		}
		t.Logf("%-14s %-30s %s %.120s", r.Backend, r.CaseID, r.Status, r.Reason)
	}
	if liar != 2 || honest != 2 {
		t.Errorf("%d divided-clock and %d honest-sdpa rows, want 2 each", liar, honest)
	}
}
