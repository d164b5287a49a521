package runner

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
)

// gradientSuite is a small suite of attention's backward modes: a bwd case
// with grouped-query heads, causal, of odd unequal lengths, checked on
// every row, and a fwd+bwd case checked on a sample of rows.
const gradientSuite = `
name = "gradients"
[measurement]
warmup_runs = 1
min_samples = 6
time_cap = "100ms"
call_samples = 3
call_timeout = "30s"
[check]
full_check_max_pairs = 8192
sampled_rows = 16
[[cases]]
batch = 1
heads = 4
kv_heads = 2
seq_q = 37
seq_k = 53
head_dim = 32
causal = true
mode = "bwd"
[[cases]]
batch = 2
heads = 4
kv_heads = 2
seq_q = 45
head_dim = 16
mode = "fwd+bwd"
`

// TestWrongGradientsFail runs the backward suite through the host on the
// cpu-reference and on a copy of it per planted fault. Every faulty row
// must FAIL with a reason that names the gradient the fault is in, on both
// the fully checked and the sampled case; the honest copy and the
// cpu-reference must PASS.
func TestWrongGradientsFail(t *testing.T) {
	want := []struct {
		fault  string
		status results.Status
		reason string // the start of the row's reason
	}{
		{"zero-dk", results.StatusFail, "dk: output is all zeros"},
		{"nan-dq", results.StatusFail, "dq: output has 1 NaN"},
		{"swap-dkdv", results.StatusFail, "dk: "},
		{"wrong-group", results.StatusFail, "dk: "},
		{"transposed-dk", results.StatusFail, "dk: "},
		{"noise-dq", results.StatusFail, "dq: "},
		{"late-noise-dq", results.StatusFail, "checked run 2: dq: "},
		{"jitter-dq", results.StatusPass, ""},
		{"honest", results.StatusPass, ""},
	}
	var faults []string
	for _, w := range want {
		faults = append(faults, w.fault)
	}
	run, s, plugins := runPlanted(t, "test-wronggrad", "internal/testplugins/wronggrad", "gradients.toml", gradientSuite, faults)
	sampled := 0
	for _, c := range s.Cases {
		for _, w := range want {
			backend := "test-wronggrad-" + w.fault
			r := find(run, c.ID, backend)
			if r == nil {
				t.Errorf("%s %s: no row", c.ID, backend)
				continue
			}
			t.Logf("%s %-28s %-5s %s", c.ID, backend, r.Status, r.Reason)
			if r.Status != w.status || !strings.HasPrefix(r.Reason, w.reason) {
				t.Errorf("%s %s: %s %q, want %s starting %q", c.ID, backend, r.Status, r.Reason, w.status, w.reason)
			}
			// Runs that differ in gradients alone, each within the check,
			// are a finding on a PASS row.
			if _, noted := r.Facts["nondeterministic"]; noted != (w.fault == "jitter-dq") {
				t.Errorf("%s %s: nondeterministic fact %q, want one only for jitter-dq", c.ID, backend, r.Facts["nondeterministic"])
			}
		}
		r := find(run, c.ID, "cpu-reference")
		if r == nil || r.Status != results.StatusPass {
			t.Errorf("%s cpu-reference: %+v, want a PASS", c.ID, r)
			continue
		}
		outputs := 3 // dq, dk, dv
		if c.Params["mode"] == "fwd+bwd" {
			outputs++ // and o first
		}
		if r.Check == nil || len(r.Check.Outputs) != outputs {
			t.Errorf("%s cpu-reference: check %+v, want a record per output", c.ID, r.Check)
		} else if r.Check.Outputs[0].Sampled {
			sampled++
		}
	}
	if sampled != 1 {
		t.Errorf("%d cases checked on a sample of rows, want 1 of 2", sampled)
	}
	assertNoPluginProcesses(t, plugins)
}
