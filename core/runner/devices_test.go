package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

const devicesSuite = `
name = "devices"
[measurement]
warmup_runs = 1
min_samples = 6
time_cap = "50ms"
call_samples = 2
call_timeout = "10s"
l2 = ["hot"]
[[sweeps]]
batch = [1]
heads = [2]
seq_q = [32, 64, 96, 128]
head_dim = [32]
`

var testGPUs = []results.RowDevice{
	{Index: 0, Name: "Test GPU", UUID: "GPU-test-0"},
	{Index: 1, Name: "Test GPU", UUID: "GPU-test-1"},
}

// runOnTestGPUs runs test-pinned, which claims a GPU, and cpu-reference
// over two GPUs that exist only as the CUDA_VISIBLE_DEVICES each queue's
// plugin processes are given: real processes, no GPU.
func runOnTestGPUs(t *testing.T) *results.Run {
	t.Helper()
	plugins := []host.Plugin{
		{Name: "test-pinned", Path: buildtest.Plugin(t, "test-pinned", "internal/testplugins/pinned")},
		{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")},
	}
	s, err := suite.Parse("devices.toml", []byte(devicesSuite))
	if err != nil {
		t.Fatal(err)
	}
	// The host's own setting must lose to each queue's pin.
	t.Setenv("CUDA_VISIBLE_DEVICES", "GPU-of-the-host")
	out := filepath.Join(t.TempDir(), "results.json")
	run, err := RunDevices(context.Background(), Config{Suite: s, Plugins: plugins, ResultsPath: out, Command: "test"}, testGPUs)
	if err != nil {
		t.Fatalf("RunDevices: %v", err)
	}
	saved, err := results.Load(out)
	if err != nil || len(saved.Results) != len(run.Results) {
		t.Fatalf("saved file: %v, %d rows against %d", err, len(saved.Results), len(run.Results))
	}
	return run
}

// TestDevicesPinEachQueueToItsGPU: every GPU row ran in a plugin pinned to
// the GPU it records, both GPUs got rows, and the CPU backend ran apart,
// with no GPU recorded.
func TestDevicesPinEachQueueToItsGPU(t *testing.T) {
	run := runOnTestGPUs(t)
	perGPU := map[string]int{}
	for _, r := range run.Results {
		switch r.Backend {
		case "test-pinned":
			if r.Device == nil || r.Facts["cuda_visible_devices"] != r.Device.UUID {
				t.Errorf("%s: ran with CUDA_VISIBLE_DEVICES=%q, records device %+v", r.CaseID, r.Facts["cuda_visible_devices"], r.Device)
				continue
			}
			perGPU[r.Device.UUID]++
		case "cpu-reference":
			if r.Device != nil || r.Status != results.StatusPass {
				t.Errorf("cpu-reference %s: device %+v, status %s (%s)", r.CaseID, r.Device, r.Status, r.Reason)
			}
		}
	}
	if len(run.Results) != 8 || perGPU["GPU-test-0"] == 0 || perGPU["GPU-test-1"] == 0 {
		t.Errorf("%d rows, GPU rows per GPU %v: want 8 rows and both GPUs used", len(run.Results), perGPU)
	}
	var parts []string
	for _, p := range run.Parts {
		parts = append(parts, p.Source)
	}
	if strings.Join(parts, ",") != "gpu 0,gpu 1,cpu" || run.Status != results.RunComplete {
		t.Errorf("parts %v, status %s", parts, run.Status)
	}
}

// TestADeadGPUFailsOnlyItsOwnRows: the plugin cannot start on GPU 1; its
// queue's rows are ERRORs naming the GPU, and GPU 0's rows ran.
func TestADeadGPUFailsOnlyItsOwnRows(t *testing.T) {
	t.Setenv("FLASHCORE_TEST_DEAD_GPU", "GPU-test-1")
	run := runOnTestGPUs(t)
	seen := map[string]int{}
	for _, r := range run.Results {
		if r.Backend != "test-pinned" {
			continue
		}
		seen[r.Device.UUID]++
		switch r.Device.UUID {
		case "GPU-test-1":
			if r.Status != results.StatusError || !strings.Contains(r.Reason, "GPU 1 (GPU-test-1): the plugin did not come up on it") {
				t.Errorf("%s on the dead GPU: %s (%s)", r.CaseID, r.Status, r.Reason)
			}
		case "GPU-test-0":
			// test-pinned writes Q, not attention: a FAIL, but one that ran.
			if r.Status != results.StatusFail || r.Facts["cuda_visible_devices"] != "GPU-test-0" {
				t.Errorf("%s on the live GPU: %s (%s)", r.CaseID, r.Status, r.Reason)
			}
		}
	}
	if seen["GPU-test-0"] == 0 || seen["GPU-test-1"] == 0 {
		t.Errorf("rows per GPU %v: want rows on both", seen)
	}
	i := -1
	for j, b := range run.Backends {
		if b.Name == "test-pinned" {
			i = j
		}
	}
	if i < 0 || !run.Backends[i].Fault {
		t.Errorf("test-pinned is not marked as faulted: %+v", run.Backends)
	}
}
