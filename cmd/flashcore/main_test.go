package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flashcore/bench/internal/bridge/bridgetest"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/internal/testplugins/stray"
)

// These tests run the flashcore binary as a user does and end it in each
// way a run ends, then check that nothing its plugins started is left
// running and nothing is left in its temporary directory.

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

const tinySuite = `
name = "tiny"
[measurement]
warmup_runs = 1
min_samples = 6
time_cap = "50ms"
call_samples = 2
call_timeout = "60s"
[[sweeps]]
batch = [1]
heads = [2]
seq_q = [16]
head_dim = [64]
`

// ending is how a run ends: on its own, or by a signal sent once what
// ready waits for has happened.
type ending struct {
	name     string
	signal   syscall.Signal // 0: the run ends on its own
	wantCode int            // -1: killed, no exit code
}

var endings = []ending{
	{"to the end", 0, 1}, // the test plugins copy Q, which FAILs
	{"interrupted", syscall.SIGINT, 130},
	{"terminated", syscall.SIGTERM, 130},
	{"killed", syscall.SIGKILL, -1},
}

// TestNoStraySurvivesARun runs the test plugins whose grandchildren escape
// their plugin (by setsid, and by double-forking) and ends the run each way.
func TestNoStraySurvivesARun(t *testing.T) {
	flashcore := buildtest.Binary(t, "flashcore", "cmd/flashcore")
	places := []string{
		filepath.Dir(buildtest.Plugin(t, "test-setsid", "internal/testplugins/setsid")),
		filepath.Dir(buildtest.Plugin(t, "test-doublefork", "internal/testplugins/doublefork")),
	}
	for _, e := range endings {
		t.Run(e.name, func(t *testing.T) {
			env := []string{"FLASHCORE_PLUGIN_PATH=" + strings.Join(places, ":")}
			if e.signal != 0 {
				env = append(env, stray.HangEnv+"=1") // so the run is mid-call when the signal comes
			}
			ready := func(marker, _ string) bool { return len(stray.Sleepers(marker)) == 2 }
			runAndEnd(t, flashcore, "test-setsid,test-doublefork", env, e, ready)
		})
	}
}

// TestNoBridgeScratchSurvivesARun ends runs of a Python bridge while its
// worker runs, and checks that its scripts directory went with it.
func TestNoBridgeScratchSurvivesARun(t *testing.T) {
	bridgetest.RequireTorch(t)
	flashcore := buildtest.Binary(t, "flashcore", "cmd/flashcore")
	plugin := bridgetest.Plugin(t, "pytorch-sdpa")
	for _, e := range endings[1:] {
		t.Run(e.name, func(t *testing.T) {
			env := []string{"FLASHCORE_PLUGIN_PATH=" + plugin}
			ready := func(_, tmp string) bool {
				scripts, _ := filepath.Glob(filepath.Join(tmp, "flashcore-pytorch-sdpa-*", "flashcore-pytorch-sdpa-*", "worker_main.py"))
				return len(scripts) > 0
			}
			runAndEnd(t, flashcore, "pytorch-sdpa", env, e, ready)
		})
	}
}

// runAndEnd runs flashcore on backends with env, a marker every process
// carries and a temporary directory of its own; ends it as e says once
// ready(marker, tmp) holds; and checks nothing is left.
func runAndEnd(t *testing.T, flashcore, backends string, env []string, e ending, ready func(marker, tmp string) bool) {
	t.Helper()
	work := t.TempDir()
	tmp := shortTempDir(t)
	marker := stray.NewMarker()
	suite := filepath.Join(work, "tiny.toml")
	if err := os.WriteFile(suite, []byte(tinySuite), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flashcore, "run", "--suite", suite, "--backends", backends, "--out", filepath.Join(work, "results.json"))
	cmd.Env = append(append(os.Environ(), env...), "TMPDIR="+tmp, stray.MarkerEnv+"="+marker)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if e.signal != 0 {
		if !waitFor(func() bool { return ready(marker, tmp) }, 20*time.Second) {
			t.Errorf("the run never got ready to be ended\n%s", &output)
		}
		time.Sleep(200 * time.Millisecond)
		cmd.Process.Signal(e.signal)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(25 * time.Second):
		cmd.Process.Kill()
		err = <-exited
		t.Errorf("flashcore did not end\n%s", &output)
	}
	if code := exitCode(err); code != e.wantCode {
		t.Errorf("exit code %d, want %d\n%s", code, e.wantCode, &output)
	}
	if !waitFor(func() bool { return len(stray.Find(marker)) == 0 }, 5*time.Second) {
		left := stray.Find(marker)
		t.Errorf("%d process(es) survived: %s", len(left), stray.Describe(left))
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !waitFor(func() bool { left, _ := os.ReadDir(tmp); return len(left) == 0 }, 5*time.Second) {
		left, _ := filepath.Glob(filepath.Join(tmp, "*", "*"))
		t.Errorf("left in the temporary directory: %v", left)
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -2
}

func waitFor(condition func() bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !condition() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// shortTempDir is a temporary directory with a short path: go-plugin's
// Unix socket goes in a directory made in it, and socket paths are limited
// to 107 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
