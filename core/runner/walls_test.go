package runner

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
)

// diagnosticOf is the summary of the row's diagnostic that starts with
// prefix, or "".
func diagnosticOf(r *results.Result, prefix string) string {
	if r == nil {
		return ""
	}
	for _, d := range r.Diagnostics {
		if strings.HasPrefix(d.Summary, prefix) {
			return d.Summary
		}
	}
	return ""
}

// TestNeighboursAreWalledOff runs the lies against other backends behind
// the walls: a plugin that watches the temporary directories for other
// rows' outputs steals none and fails; one that flips bytes of other rows'
// inputs finds none; one that burns a CPU takes nothing from the rows
// measured beside it (it is frozen then); one that writes itself into the
// root cgroup is denied. The honest backends PASS.
func TestNeighboursAreWalledOff(t *testing.T) {
	iso := host.CurrentIsolation()
	if iso.Landlock == 0 || !iso.Cgroup {
		t.Skipf("this machine cannot wall plugins off: %s", iso)
	}
	want := []lieVerdict{
		{"honest", results.StatusPass, ""},
		{"peek", results.StatusFail, ""},
		{"meddle", results.StatusPass, ""},
		{"burn", results.StatusPass, ""},
		{"escape", results.StatusPass, ""},
		{"", results.StatusPass, ""},
	}
	run, s, plugins := runLies(t, "walls.toml", liarSuite, want)
	for _, c := range s.Cases {
		for _, w := range want {
			checkLie(t, run, c.ID, w)
		}
		if got := diagnosticOf(find(run, c.ID, "test-liar-peek"), "peek:"); got != "peek: stole 0 outputs" {
			t.Errorf("%s: the peeking plugin says %q, want it to have stolen nothing", c.ID, got)
		}
		if got := diagnosticOf(find(run, c.ID, "test-liar-meddle"), "meddle:"); got != "meddle: changed 0 input files" {
			t.Errorf("%s: the meddling plugin says %q, want it to have changed nothing", c.ID, got)
		}
		if got := diagnosticOf(find(run, c.ID, "test-liar-escape"), "escape:"); !strings.Contains(got, "permission denied") {
			t.Errorf("%s: the escaping plugin says %q, want permission denied", c.ID, got)
		}
	}
	if !strings.HasPrefix(run.Environment.Isolation, "isolation: landlock (ABI ") {
		t.Errorf("environment.isolation = %q", run.Environment.Isolation)
	}
	burn := backendNamed(run, "test-liar-burn")
	if burn == nil || burn.CPUOutsideRowsMs == nil || *burn.CPUOutsideRowsMs > float64(interferenceFloor.Milliseconds()) {
		t.Errorf("the burning plugin's CPU outside its rows: %+v, want it read and under %v", burn, interferenceFloor)
	}
	assertNoPluginProcesses(t, plugins)
}

// TestNeighboursWithoutWalls is the control: with the walls off the same
// lies reach their neighbours, so the test above can fail. The burner is
// still caught, by its cgroup's CPU time, on the rows it slowed.
func TestNeighboursWithoutWalls(t *testing.T) {
	if !host.CurrentIsolation().Cgroup {
		t.Skip("no cgroup of its own for a plugin here")
	}
	t.Setenv(host.IsolationEnv, "off")
	want := []lieVerdict{{lie: "honest"}, {lie: "peek"}, {lie: "meddle"}, {lie: "burn"}, {lie: ""}}
	run, s, _ := runLies(t, "no-walls.toml", liarSuite, want)
	stole, meddled, interfered := false, false, false
	for _, c := range s.Cases {
		stole = stole || !strings.HasPrefix(diagnosticOf(find(run, c.ID, "test-liar-peek"), "peek:"), "peek: stole 0")
		for _, w := range want {
			r := find(run, c.ID, w.backend())
			if r == nil {
				continue
			}
			t.Logf("%s %-24s %-5s %s", c.ID, w.backend(), r.Status, r.Reason)
			meddled = meddled || strings.Contains(r.Reason, "modified its read-only input files") ||
				strings.Contains(r.Reason, "input hash mismatch")
			interfered = interfered || strings.Contains(r.Reason, "interference: while this row was measured, test-liar-burn used")
		}
	}
	if !stole || !meddled || !interfered {
		t.Errorf("without walls: stole %v, meddled %v, interference caught %v; want all three", stole, meddled, interfered)
	}
	if !strings.Contains(run.Environment.Isolation, "not enforced: landlock and freezer (FLASHCORE_ISOLATION=off)") {
		t.Errorf("environment.isolation = %q", run.Environment.Isolation)
	}
}
