package attention

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// Facet is the chart panel of a case: the cases that share head dim,
// dtype, causality and grouping of heads, so that only the sequence
// length (and the batch, which suites scale with it) varies along a line.
// Facets are drawn by mode (forward first), then head dim, then dtype,
// then grouping, non-causal before causal, unmasked before masked; the
// masks set (bottom-right, a window, soft-capping) and a backward mode
// are part of the facet's name and title.
func Facet(p op.Params) op.Facet {
	headDim, dtype, causal := p.Int("head_dim"), p.DType("dtype"), p.Bool("causal")
	group := 1
	if kv := p.Int("kv_heads"); kv > 0 && p.Int("heads") != kv {
		group = p.Int("heads") / kv
	}
	name := []string{fmt.Sprintf("d%d", headDim), string(dtype)}
	title := fmt.Sprintf("D%d %s", headDim, dtype)
	if group > 1 {
		name = append(name, fmt.Sprintf("gqa%d", group))
		title += fmt.Sprintf(", %d query heads per KV head", group)
	}
	causalRank := 0
	if causal {
		name = append(name, "causal")
		title += ", causal"
		causalRank = 1
	}
	masks := ""
	if suffix := mask.IDSuffix(p); suffix != "" {
		name = append(name, strings.TrimPrefix(suffix, "-"))
		title += "," + mask.LabelSuffix(p)
		masks = "|" + suffix
	}
	mode := sdk.Mode(p["mode"]).Or()
	modeRank := slices.Index(sdk.Modes, mode)
	if mode != sdk.Forward {
		name = append(name, strings.ReplaceAll(string(mode), "+", ""))
		title += ", " + string(mode)
	}
	return op.Facet{Name: strings.Join(name, "-"), Title: title,
		Order: fmt.Sprintf("%d|%010d|%s|%010d|%d", modeRank, headDim, dtype, group, causalRank) + masks}
}
