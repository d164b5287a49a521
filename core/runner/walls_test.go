package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
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
	if !strings.Contains(run.Environment.Isolation, "not enforced: landlock, freezer and a uid per plugin (FLASHCORE_ISOLATION=off)") {
		t.Errorf("environment.isolation = %q", run.Environment.Isolation)
	}
}

// openCopies copies each plugin's binary into one new directory that
// users other than root may reach (the test's temporary directories are
// closed to them), so that each plugin can run as a user of its own.
func openCopies(t *testing.T, plugins []host.Plugin) []host.Plugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "flashcore-open-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var copies []host.Plugin
	for _, p := range plugins {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		p.Path = filepath.Join(dir, filepath.Base(p.Path))
		if err := os.WriteFile(p.Path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, p)
	}
	return copies
}

// TestPluginsRunAsTheirOwnUsers: where the host runs as root, each plugin
// runs as a uid of its own, and root's powers that Landlock leaves (a
// sysctl under /proc) are gone; the walls of the test above hold as well,
// and honest backends PASS. The control, with the walls off, shows the
// same plugin writing the sysctl as root, so the test can fail.
func TestPluginsRunAsTheirOwnUsers(t *testing.T) {
	iso := host.CurrentIsolation()
	if !iso.UIDs || iso.Landlock == 0 || !iso.Cgroup {
		t.Skipf("plugins cannot have users of their own here: %s", iso)
	}
	lies := []string{"honest", "root", "peek", "meddle", "escape"}
	plugins := append(liarPlugins(t, lies...),
		host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	plugins = openCopies(t, plugins)
	// None of these plugins runs Python; the host checks the interpreter
	// it would use all the same, so it must lie where others may reach it.
	python := openCopies(t, []host.Plugin{{Name: "python3", Path: "/bin/true"}})[0].Path
	t.Setenv("FLASHCORE_PYTHON", python)
	t.Setenv("PYTHONPATH", "")
	t.Setenv("LD_LIBRARY_PATH", "")
	s, err := suite.Parse("users.toml", []byte(liarSuite))
	if err != nil {
		t.Fatal(err)
	}
	run := func(plugins []host.Plugin) *results.Run {
		run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins, ResultsPath: filepath.Join(t.TempDir(), "results.json"),
			HostOptions: host.Options{StartTimeout: 3 * time.Second}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return run
	}
	walled := run(plugins)
	if !strings.Contains(walled.Environment.Isolation, "a uid per plugin") || strings.Contains(walled.Environment.Isolation, "a uid for") {
		t.Errorf("environment.isolation = %q, want a uid for every plugin", walled.Environment.Isolation)
	}
	want := []lieVerdict{
		{"honest", results.StatusPass, ""},
		{"root", results.StatusPass, ""},
		{"peek", results.StatusFail, ""},
		{"meddle", results.StatusPass, ""},
		{"escape", results.StatusPass, ""},
		{"", results.StatusPass, ""},
	}
	for _, c := range s.Cases {
		for _, w := range want {
			checkLie(t, walled, c.ID, w)
		}
		got := diagnosticOf(find(walled, c.ID, "test-liar-root"), "root:")
		if !strings.HasPrefix(got, "root: uid ") || strings.Contains(got, "uid 0,") || strings.Contains(got, "sysctl written") {
			t.Errorf("%s: the root plugin says %q, want another uid and the sysctl not written", c.ID, got)
		}
		if got := diagnosticOf(find(walled, c.ID, "test-liar-peek"), "peek:"); got != "peek: stole 0 outputs" {
			t.Errorf("%s: the peeking plugin says %q, want it to have stolen nothing", c.ID, got)
		}
		if got := diagnosticOf(find(walled, c.ID, "test-liar-meddle"), "meddle:"); got != "meddle: changed 0 input files" {
			t.Errorf("%s: the meddling plugin says %q, want it to have changed nothing", c.ID, got)
		}
	}
	assertNoPluginProcesses(t, plugins)

	// The control runs the root plugin alone: the other lies reach it
	// without the walls. It shows the write only where root can make it
	// here (a container may mount /proc/sys read-only).
	if value, err := os.ReadFile("/proc/sys/vm/stat_interval"); err != nil || os.WriteFile("/proc/sys/vm/stat_interval", value, 0) != nil {
		t.Skip("root cannot write the sysctl on this machine, so the control would show nothing")
	}
	t.Setenv(host.IsolationEnv, "off")
	open := run(plugins[1:2])
	r := find(open, s.Cases[0].ID, "test-liar-root")
	if got := diagnosticOf(r, "root:"); got != "root: uid 0, sysctl written" {
		t.Errorf("without walls the root plugin says %q, want it to have written the sysctl as root (row %+v)", got, r)
	}
}
