package ops

import (
	"strconv"
	"testing"

	"github.com/flashcore/bench/op"
)

// TestChartOf: attention's cases are charted along seq_k, in panels by
// head dim, dtype, grouping of heads and causality; rmsnorm and unknown
// ops are not charted.
func TestChartOf(t *testing.T) {
	attn := func(heads, kv, d int, dtype string, causal bool) op.Params {
		p := op.Params{"batch": "1", "heads": strconv.Itoa(heads), "kv_heads": strconv.Itoa(kv), "seq_q": "512", "seq_k": "512",
			"head_dim": strconv.Itoa(d), "dtype": dtype, "causal": "false"}
		if causal {
			p["causal"] = "true"
		}
		return p
	}
	tests := []struct {
		op          string
		params      op.Params
		charted     bool
		name, title string
	}{
		{"attention", attn(8, 8, 64, "fp16", false), true, "d64-fp16", "D64 fp16"},
		{"attention", attn(32, 8, 128, "bf16", true), true, "d128-bf16-gqa4-causal", "D128 bf16, 4 query heads per KV head, causal"},
		{"rmsnorm", op.Params{"rows": "4", "cols": "8", "dtype": "fp16"}, false, "", ""},
		{"no-such-op", op.Params{}, false, "", ""},
	}
	for _, tt := range tests {
		chart, f, ok := ChartOf(tt.op, tt.params)
		if ok != tt.charted || f.Name != tt.name || f.Title != tt.title {
			t.Errorf("%s %v: charted %v, facet %q %q; want %v, %q %q", tt.op, tt.params, ok, f.Name, f.Title, tt.charted, tt.name, tt.title)
		}
		if ok && chart.X != "seq_k" {
			t.Errorf("%s: x axis %q, want seq_k", tt.op, chart.X)
		}
	}
	// Facets sort by head dim before dtype, numerically.
	_, d64, _ := ChartOf("attention", attn(8, 8, 64, "fp32", false))
	_, d128, _ := ChartOf("attention", attn(8, 8, 128, "bf16", false))
	if !(d64.Order < d128.Order) {
		t.Errorf("d64's facet sorts after d128's: %q, %q", d64.Order, d128.Order)
	}
}
