package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

// masksSuite is a small suite of dense attention under masks: a chunked
// prefill (fewer queries than keys) aligned bottom-right with grouped
// heads, checked on every row; the same with a sliding window, checked on
// a sample of rows; and soft-capping.
const masksSuite = `
name = "masks"
[measurement]
warmup_runs = 1
min_samples = 6
time_cap = "100ms"
call_samples = 3
call_timeout = "30s"
[check]
full_check_max_pairs = 200000
sampled_rows = 8
[[cases]]
batch = 1
heads = 4
kv_heads = 2
seq_q = 40
seq_k = 130
head_dim = 32
causal = true
causal_align = "bottom-right"
[[cases]]
batch = 1
heads = 4
seq_q = 200
seq_k = 300
head_dim = 32
causal = true
causal_align = "bottom-right"
window_left = 24
[[cases]]
batch = 1
heads = 2
seq_q = 64
head_dim = 32
causal = true
softcap = 1
`

// TestWrongMasksFail runs the masks suite through the host on the
// cpu-reference and on a copy of the wrongmask plugin per planted fault.
// A fault must FAIL every case whose mask it gets wrong, on the fully
// checked and the sampled case, and PASS those it does not touch; the
// honest copy and the cpu-reference must PASS.
func TestWrongMasksFail(t *testing.T) {
	want := []struct {
		fault  string
		status [3]results.Status // per case of masksSuite
	}{
		{"top-left", [3]results.Status{results.StatusFail, results.StatusFail, results.StatusPass}},
		{"no-window", [3]results.Status{results.StatusPass, results.StatusFail, results.StatusPass}},
		{"no-softcap", [3]results.Status{results.StatusPass, results.StatusPass, results.StatusFail}},
		{"honest", [3]results.Status{results.StatusPass, results.StatusPass, results.StatusPass}},
	}
	var faults []string
	for _, w := range want {
		faults = append(faults, w.fault)
	}
	plugins := append(pluginCopies(t, "test-wrongmask", "internal/testplugins/wrongmask", faults...),
		host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	s, err := suite.Parse("masks.toml", []byte(masksSuite))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), Config{
		Suite: s, Plugins: plugins, ResultsPath: filepath.Join(t.TempDir(), "results.json"),
		HostOptions: host.Options{StartTimeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, c := range s.Cases {
		if r := find(run, c.ID, "cpu-reference"); r == nil || r.Status != results.StatusPass {
			t.Errorf("%s cpu-reference: %+v, want PASS", c.ID, r)
		}
		for _, w := range want {
			backend := "test-wrongmask-" + w.fault
			r := find(run, c.ID, backend)
			if r == nil {
				t.Errorf("%s %s: no row", c.ID, backend)
				continue
			}
			t.Logf("%s %-26s %-5s %s", c.ID, backend, r.Status, r.Reason)
			if r.Status != w.status[i] {
				t.Errorf("%s %s: %s %q, want %s", c.ID, backend, r.Status, r.Reason, w.status[i])
			}
		}
	}
	if r := find(run, s.Cases[1].ID, "cpu-reference"); r != nil && !r.Check.Sampled {
		t.Errorf("%s: checked every row, want a sample (the suite's sampled_rows)", s.Cases[1].ID)
	}
}
