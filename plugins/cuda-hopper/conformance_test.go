package cudahopper

import (
	"testing"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/sdk"
)

// TestConformance checks the plugin binary with the conformance kit,
// started through go-plugin as flashcore starts it: outputs against the
// fp64 reference with the default suite's tolerances, on cases derived from
// the declared capabilities, refusals of what it did not declare, the facts
// and the samples. Attention's cases run in two passes (kernelPins), so that
// each kernel's tunables are swept in every combination. Where the binary
// has no GPU to run on (or was built without CUDA), it is skipped with the
// plugin's own reason.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	opts := cudatest.Conformance(t, "cuda-hopper")
	opts.Pins = kernelPins()
	opts.Shapes = severalTilesABlock
	conformance.Run(t, opts)
}

// severalTilesABlock are shapes with more 128-row query tiles than an H100
// has SMs (132), so that each block of the persistent grid takes several in
// turn, tiles of one to five K/V tiles among them under causal masking: the
// kit's edges fit in one tile a block, and a block of the turns' kernel
// (overlap 2) hung at the first of these when its consumers handed turns
// over per tile.
var severalTilesABlock = []sdk.Shape{
	{Batch: 4, Heads: 32, KVHeads: 8, SeqQ: 640, SeqK: 640, HeadDim: 64, DType: sdk.FP16, Causal: true},
	{Batch: 2, Heads: 40, KVHeads: 8, SeqQ: 513, SeqK: 513, HeadDim: 128, DType: sdk.BF16, Causal: true},
}

// kernelPins are the conformance kit's passes over attention: the wgmma
// kernel with each of its producers (a pass each, so each pass's 12
// combinations are swept whole) and the split kernel's tunables at their
// defaults, and the split kernel with the wgmma kernel's at theirs. Auto
// picks one of the two kernels; its rule is TestPlanChoosesTheKernel's.
func kernelPins() []map[string]string {
	defaults := func(ts []sdk.Tunable) map[string]string {
		m := map[string]string{}
		for _, t := range ts {
			m[t.Name] = t.Default
		}
		return m
	}
	var pins []map[string]string
	for _, tun := range tunables {
		if tun.Name != producer {
			continue
		}
		for _, value := range tun.Values {
			wgmma := defaults(decodeTunables)
			wgmma[kernelChoice] = kernelWGMMA
			wgmma[producer] = value
			pins = append(pins, wgmma)
		}
	}
	split := defaults(tunables)
	split[kernelChoice] = kernelSplit
	return append(pins, split)
}
