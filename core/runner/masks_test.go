package runner

import (
	"testing"

	"github.com/flashcore/bench/core/results"
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
	checkPlanted(t, "test-wrongmask", "internal/testplugins/wrongmask", "masks.toml", masksSuite, []plantedFault{
		{"top-left", []results.Status{results.StatusFail, results.StatusFail, results.StatusPass}},
		{"no-window", []results.Status{results.StatusPass, results.StatusFail, results.StatusPass}},
		{"no-softcap", []results.Status{results.StatusPass, results.StatusPass, results.StatusFail}},
		{"honest", []results.Status{results.StatusPass, results.StatusPass, results.StatusPass}},
	})
}
