package cudav8

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

const (
	name    = "cuda-v8"
	version = "0.1.0"
	// kernelPath is kernel.cu's repository path, as the manifest names it.
	kernelPath = "plugins/cuda-v8/kernel.cu"
	// Tunables: query rows per block, keys per K/V tile, and K/V buffers
	// in shared memory. Warps follow from tile_m: two per 16-row strip.
	tileM    = "tile_m"
	tileN    = "tile_n"
	kvStages = "kv_stages"
)

//go:embed kernel.cu
var kernelSource []byte

// New is the plugin's backend.
func New() sdk.Backend { return cudakit.New(spec()) }

func spec() cudakit.Spec {
	return cudakit.Spec{
		Name:    name,
		Version: version,
		Variant: sdk.Variant{
			Name: name,
			Description: "48-row tiles, WMMA tensor cores, cp.async double-buffered K/V, " +
				"16-byte vector I/O, dynamic shared memory; tile rows, tile columns and stages tunable",
			Capabilities: capabilities,
			Tunables:     tunables,
		},
		Kernel: cudakit.KernelFiles{
			Fatbin:   fatbin,
			Manifest: manifest,
			Sources:  cudakit.Sources(kernelPath, kernelSource),
		},
		Plan: plan,
	}
}

// capabilities: fp16 and bf16 at head dims 64 and 128, with every masking
// and shape option. Not supported: fp32 inputs (WMMA takes half and bf16
// operands) and other head dims (instantiated for 64 and 128 only). A
// configuration whose shared memory exceeds the device's per-block limit
// (tile_n 64 with 2 stages at D128 on an L4) is refused at Prepare.
var capabilities = sdk.Capabilities{
	DTypes:            []sdk.DType{sdk.FP16, sdk.BF16},
	HeadDims:          []int{64, 128},
	Causal:            true,
	NonCausal:         true,
	GroupedQueryHeads: true,
	UnequalSeqLens:    true,
	NeedsGPU:          true,
}

var tunables = []sdk.Tunable{
	{
		Name:        tileM,
		Values:      []string{"16", "32", "48", "64"},
		Default:     "48",
		Description: "query rows per block, with tile_m/8 warps (the seed design's 48x32 tile is 48)",
	},
	{
		Name:        tileN,
		Values:      []string{"32", "64"},
		Default:     "32",
		Description: "keys per K/V tile (the seed design's 48x32 tile is 32)",
	},
	{
		Name:        kvStages,
		Values:      []string{"1", "2", "3"},
		Default:     "2",
		Description: "K/V tiles in shared memory: s-1 load ahead while one is computed; 1 overlaps nothing",
	},
}

func plan(shape sdk.Shape, t map[string]string) (cudakit.Launch, error) {
	var size [3]int
	for i, name := range []string{tileM, tileN, kvStages} {
		n, err := strconv.Atoi(t[name])
		if err != nil {
			return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", name, err)
		}
		size[i] = n
	}
	m, n, stages := size[0], size[1], size[2]
	grid, err := cudakit.AttentionGrid(shape, m)
	if err != nil {
		return cudakit.Launch{}, err
	}
	return cudakit.Launch{
		Function:           cudakit.KernelName(shape.DType, shape.HeadDim, "m"+t[tileM], "n"+t[tileN], "s"+t[kvStages]),
		Grid:               grid,
		Block:              gpu.Dim3{X: 4 * m, Y: 1, Z: 1},
		DynamicSharedBytes: sharedBytes(shape.DType.Size(), shape.HeadDim, m, n, stages),
	}, nil
}

// sharedBytes mirrors V8Layout in kernel.cu: Q tile, K and V tiles per
// stage, fp32 scores, P, and two rows of statistics, each region rounded up
// to 128 bytes. Rows are padded by 8 elements (scores by 4) against bank
// conflicts. The kernel traps if launched with less than it needs.
func sharedBytes(elemSize, headDim, tileM, tileN, stages int) int {
	ld := headDim + 8
	q := align128(tileM * ld * elemSize)
	kvStage := align128(tileN * ld * elemSize)
	scores := align128(tileM * (tileN + 4) * 4)
	p := align128(tileM * (tileN + 8) * elemSize)
	stats := align128(2 * tileM * 4)
	return q + 2*stages*kvStage + scores + p + stats
}

func align128(n int) int { return (n + 127) / 128 * 128 }
