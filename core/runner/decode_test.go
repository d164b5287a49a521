package runner

import (
	"testing"

	"github.com/flashcore/bench/core/results"
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
	checkPlanted(t, "test-wrongpage", "internal/testplugins/wrongpage", "paged.toml", decodeSuite, []plantedFault{
		{"past-context", []results.Status{results.StatusFail, results.StatusFail}},
		{"in-order", []results.Status{results.StatusFail, results.StatusFail}},
		{"top-left", []results.Status{results.StatusFail, results.StatusFail}},
		{"wrong-kv-head", []results.Status{results.StatusFail, results.StatusFail}},
		{"honest", []results.Status{results.StatusPass, results.StatusPass}},
	})
}
