// Package seqlens draws the sequence lengths of a batch of uneven
// sequences, for the ops whose cases are such a batch (decode's contexts,
// varlen's prompts). Lengths depend on the case's params alone, never on
// the seed, so a case does the same work in every run and every dtype,
// and its tensors' sizes follow from its params.
package seqlens

import (
	"github.com/flashcore/bench/core/inputs"
)

// The distributions of lengths over a batch.
const (
	// Equal: every sequence is the longest.
	Equal = "equal"
	// Uniform: lengths uniform in [shortest, longest].
	Uniform = "uniform"
	// LongTail: most sequences short, a few long: longest·u³ for u
	// uniform in [0, 1), a mean of a quarter of the longest, as a serving
	// batch mixes short chats with long documents.
	LongTail = "long-tail"
)

// Dists are the distributions, in the order docs list them.
var Dists = []string{Equal, Uniform, LongTail}

// Draw returns n lengths in [shortest, longest] from dist, one of them
// longest, drawn from a generator keyed by key (which names the case's
// params that lengths depend on).
func Draw(key string, n, shortest, longest int, dist string) []int {
	out := make([]int, n)
	draws := inputs.NewStream(0, "lengths "+key, 0)
	for i := range out {
		u := draws.Uniform(i)
		switch dist {
		case Uniform:
			out[i] = shortest + int(u*float64(longest-shortest+1))
		case LongTail:
			out[i] = int(float64(longest) * u * u * u)
		default:
			out[i] = longest
		}
		out[i] = min(max(out[i], shortest, 1), longest)
	}
	if n > 0 {
		out[int(draws.Word(n)%uint64(n))] = longest
	}
	return out
}
