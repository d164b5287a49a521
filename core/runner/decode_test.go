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

// decodeSuite is a small suite of decode over a paged cache: speculative
// tokens under the bottom-right mask with grouped-query heads and uneven
// lengths, checked on every row, and one token per sequence over a
// long-tailed batch, checked on a sample of rows.
const decodeSuite = `
name = "paged"
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
op = "decode"
batch = 3
heads = 4
kv_heads = 2
q_len = 4
head_dim = 32
page_size = 16
context_len = 150
context_dist = "uniform"
[[cases]]
op = "decode"
batch = 6
heads = 8
kv_heads = 2
head_dim = 32
page_size = 32
context_len = 500
context_dist = "long-tail"
`

// TestWrongPagesFail runs the decode suite through the host on the
// cpu-reference and on a copy of the wrongpage plugin per planted fault.
// Every faulty row must FAIL, on the fully checked and the sampled case
// (top-left alignment too on one token per sequence: that token then sees
// key 0 alone, as PyTorch's is_causal makes it); the honest copy and the
// cpu-reference must PASS.
func TestWrongPagesFail(t *testing.T) {
	want := []struct {
		fault  string
		status [2]results.Status // per case of decodeSuite
	}{
		{"past-context", [2]results.Status{results.StatusFail, results.StatusFail}},
		{"in-order", [2]results.Status{results.StatusFail, results.StatusFail}},
		{"top-left", [2]results.Status{results.StatusFail, results.StatusFail}},
		{"wrong-kv-head", [2]results.Status{results.StatusFail, results.StatusFail}},
		{"honest", [2]results.Status{results.StatusPass, results.StatusPass}},
	}
	var faults []string
	for _, w := range want {
		faults = append(faults, w.fault)
	}
	plugins := append(pluginCopies(t, "test-wrongpage", "internal/testplugins/wrongpage", faults...),
		host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	s, err := suite.Parse("paged.toml", []byte(decodeSuite))
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
			backend := "test-wrongpage-" + w.fault
			r := find(run, c.ID, backend)
			if r == nil {
				t.Errorf("%s %s: no row", c.ID, backend)
				continue
			}
			t.Logf("%s %-28s %-5s %s", c.ID, backend, r.Status, r.Reason)
			if r.Status != w.status[i] {
				t.Errorf("%s %s: %s %q, want %s", c.ID, backend, r.Status, r.Reason, w.status[i])
			}
		}
	}
	if r := find(run, s.Cases[1].ID, "cpu-reference"); r != nil && !r.Check.Sampled {
		t.Errorf("%s: checked every row, want a sample (the suite's sampled_rows)", s.Cases[1].ID)
	}
}
