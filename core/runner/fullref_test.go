package runner

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/bridge"
)

// everyRowSuite is a case whose fp64 check samples a few rows per head,
// so that three wrong rows in the middle of each head are missed by most
// of its draws.
const everyRowSuite = `
name = "every-row"
[check]
full_check_max_pairs = 4096
sampled_rows = 8
[measurement]
warmup_runs = 1
min_samples = 3
time_cap = "100ms"
call_samples = 1
call_timeout = "60s"
[[cases]]
batch = 1
heads = 2
seq_q = 512
head_dim = 32
causal = true
`

// TestEveryRowIsChecked: with the harness's fp32 reference (here on the
// CPU, as the GPU's would be on a GPU machine), a backend wrong in three
// rows of each head FAILs, naming one of them, although the fp64 check
// samples 8 rows a head of 512; cpu-reference PASSes with the figures
// of every row, and the case records the reference and its calibration.
// The sampled rows are drawn at random once the output exists, so in about
// one run in ten a draw lands on a wrong row and the sampled check FAILs
// the row first: then the every-row check must still have found the
// wrong elements.
func TestEveryRowIsChecked(t *testing.T) {
	if out, err := exec.Command(bridge.Interpreter(), "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("the bridge's python (%s) cannot import torch: %v %s", bridge.Interpreter(), err, out)
	}
	want := []lieVerdict{
		{"some-rows", results.StatusFail, everyRowReason + " | relative L2 error"},
		{"", results.StatusPass, ""},
	}
	run, s, _ := runLiesWith(t, "every-row.toml", everyRowSuite, want, Config{FullReference: FullReferenceCPU, Python: bridge.Interpreter()})
	id := s.Cases[0].ID
	for _, w := range want {
		r := checkLie(t, run, id, w)
		if r == nil || r.Check == nil {
			continue
		}
		e := r.Check.EveryRow
		if e == nil || e.Rows != 2*512 {
			t.Errorf("%s: every_row %+v, want 1024 rows", w.backend(), e)
			continue
		}
		if w.lie != "some-rows" {
			continue
		}
		if e.Violations == 0 {
			t.Errorf("every_row %+v: no violation, want the wrong rows' elements", e)
		}
		switch {
		case strings.Contains(r.Reason, everyRowReason) && !strings.Contains(r.Reason, " q25"):
			t.Errorf("the reason names no wrong row (q256..q258): %s", r.Reason)
		case !strings.Contains(r.Reason, everyRowReason):
			t.Logf("the sampled check's draws found a wrong row first: %s", r.Reason)
		}
	}
	full := run.Cases[0].FullReference
	if full == nil || full.Skip != "" || full.Device != "cpu" || !(full.Calibration < 1e-5) {
		t.Errorf("case full_reference = %+v, want the CPU's, calibrated under 1e-5", full)
	}
}

// everyRowReason is how a row FAILed by the every-row check says so.
const everyRowReason = "every row, against the harness's fp32 (cpu) reference"

// TestEveryRowOff: the same run without it records no reference, checks
// no row beyond the sample, and is as before.
func TestEveryRowOff(t *testing.T) {
	want := []lieVerdict{{"", results.StatusPass, ""}}
	run, s, _ := runLiesWith(t, "every-row.toml", everyRowSuite, want, Config{FullReference: FullReferenceOff})
	if r := find(run, s.Cases[0].ID, "cpu-reference"); r == nil || r.Check == nil || r.Check.EveryRow != nil || !r.Check.Sampled {
		t.Errorf("cpu-reference's check: %+v", r)
	}
	if run.Cases[0].FullReference != nil {
		t.Errorf("full_reference %+v, want none", run.Cases[0].FullReference)
	}
}
