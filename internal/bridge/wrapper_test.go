package bridge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// TestWorkerRunsUnderTheWrapper starts a real worker under a wrapper that
// leaves a mark and execs the rest of its command line, as ncu does.
func TestWorkerRunsUnderTheWrapper(t *testing.T) {
	bridgetest.RequireTorch(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "wrapped")
	wrapper := filepath.Join(dir, "wrapper")
	script := "#!/bin/sh\necho \"$@\" > " + mark + "\nexec \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(bridge.WorkerWrapperEnv, wrapper)
	d, err := newProbe(t).Describe(bridgetest.Context(t, callTimeout))
	if err != nil || !d.Available {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	args, err := os.ReadFile(mark)
	if err != nil || !strings.Contains(string(args), "worker_main.py probe_backend") {
		t.Errorf("the wrapper saw %q (%v), want the worker's command line", args, err)
	}
}

func TestMissingWorkerWrapperIsNamed(t *testing.T) {
	t.Setenv(bridge.WorkerWrapperEnv, "/nonexistent/ncu --nvtx")
	d, err := newProbe(t).Describe(bridgetest.Context(t, callTimeout))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	const reason = "start python worker under $FLASHCORE_WORKER_WRAPPER (/nonexistent/ncu)"
	if d.Available || !strings.HasPrefix(d.UnavailableReason, reason) {
		t.Errorf("Describe = %+v, want unavailable with a reason starting %q", d, reason)
	}
}
