package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

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
time_cap = "100ms"
call_samples = 3
call_timeout = "3s"
[[sweeps]]
batch = [1]
heads = [2]
seq_q = [64, 96]
head_dim = [64]
`

// TestMisbehavingPluginsAreReportedAndTheRunGoesOn runs real plugin
// processes that crash, hang, write to stdout before the handshake, and
// return zeros or NaN, next to the real cpu-reference, and checks each ends
// as the row (or unavailable backend) it should, with the good backend's
// rows intact in every case.
func TestMisbehavingPluginsAreReportedAndTheRunGoesOn(t *testing.T) {
	plugins := []host.Plugin{{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")}}
	for _, name := range []string{"crash", "hang", "stdout", "zeros", "nan"} {
		plugins = append(plugins, host.Plugin{Name: "test-" + name, Path: buildtest.Plugin(t, "test-"+name, "internal/testplugins/"+name)})
	}
	s, err := suite.Parse("tiny.toml", []byte(tinySuite))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results.json")
	run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins, ResultsPath: out})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if run.Status != results.RunComplete {
		t.Errorf("status %q, want complete", run.Status)
	}
	want := []struct {
		backend string
		status  results.Status
		reason  string
	}{
		{"cpu-reference", results.StatusPass, ""},
		{"test-crash", results.StatusError, "plugin crashed: boom: simulated crash"},
		{"test-hang", results.StatusError, "no answer within 3s (plugin hung); killed"},
		{"test-zeros", results.StatusFail, "output is all zeros"},
		{"test-nan", results.StatusFail, "NaN"},
	}
	for _, c := range s.Cases {
		for _, w := range want {
			r := find(run, c.ID, w.backend)
			if r == nil {
				t.Errorf("%s %s: no row", c.ID, w.backend)
				continue
			}
			if r.Status != w.status || !strings.Contains(r.Reason, w.reason) {
				t.Errorf("%s %s: %s %q, want %s containing %q", c.ID, w.backend, r.Status, r.Reason, w.status, w.reason)
			}
		}
	}
	stdoutBackend := backendNamed(run, "test-stdout")
	if stdoutBackend == nil || stdoutBackend.Available ||
		!strings.Contains(stdoutBackend.UnavailableReason, "wrote to stdout before the handshake") {
		t.Errorf("test-stdout: %+v, want unavailable because it wrote to stdout", stdoutBackend)
	}
	saved, err := results.Load(out)
	if err != nil {
		t.Fatalf("load saved results: %v", err)
	}
	if len(saved.Results) != len(run.Results) {
		t.Errorf("saved %d rows, ran %d", len(saved.Results), len(run.Results))
	}
	assertNoPluginProcesses(t, plugins)
}

// TestInterruptLeavesValidPartialResults cancels a run while a plugin hangs
// and checks the results file is valid, says interrupted and keeps the
// rows finished before the interrupt.
func TestInterruptLeavesValidPartialResults(t *testing.T) {
	plugins := []host.Plugin{
		{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")},
		{Name: "test-hang", Path: buildtest.Plugin(t, "test-hang", "internal/testplugins/hang")},
	}
	s, err := suite.Parse("tiny.toml", []byte(strings.Replace(tinySuite, `call_timeout = "3s"`, `call_timeout = "60s"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results.json")
	ctx, cancel := context.WithCancel(context.Background())
	progress := &cancelOnWrite{cancel: cancel, after: "test-hang"}
	go func() { time.Sleep(30 * time.Second); cancel() }()
	_, err = Run(ctx, Config{Suite: s, Plugins: plugins, ResultsPath: out, Progress: progress})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run error = %v, want interrupted", err)
	}
	saved, err := results.Load(out)
	if err != nil {
		t.Fatalf("partial results do not load: %v", err)
	}
	if saved.Status != results.RunInterrupted || len(saved.Results) == 0 || saved.Results[0].Status != results.StatusPass {
		t.Errorf("partial results: status %q, %d rows; want interrupted with the cpu-reference row", saved.Status, len(saved.Results))
	}
	assertNoPluginProcesses(t, plugins)
}

// cancelOnWrite cancels the run shortly after the first progress line, so
// the interrupt lands while the hanging plugin holds the next row.
type cancelOnWrite struct {
	cancel context.CancelFunc
	after  string
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	go func() { time.Sleep(300 * time.Millisecond); c.cancel() }()
	return len(p), nil
}

func find(run *results.Run, caseID, backend string) *results.Result {
	for i := range run.Results {
		if run.Results[i].CaseID == caseID && run.Results[i].Backend == backend {
			return &run.Results[i]
		}
	}
	return nil
}

func backendNamed(run *results.Run, name string) *results.Backend {
	for i := range run.Backends {
		if run.Backends[i].Name == name {
			return &run.Backends[i]
		}
	}
	return nil
}

// assertNoPluginProcesses fails if any of the plugin binaries still runs.
func assertNoPluginProcesses(t *testing.T, plugins []host.Plugin) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		out, _ := exec.Command("ps", "-eo", "args").Output()
		var alive []string
		for _, p := range plugins {
			if strings.Contains(string(out), p.Path) {
				alive = append(alive, p.Name)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("plugin processes still running after the run: %v", alive)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
