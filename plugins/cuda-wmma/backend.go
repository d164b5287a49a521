package cudawmma

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

const (
	name    = "cuda-wmma"
	version = "0.1.0"
	// kernelPath is kernel.cu's repository path, as the manifest names it.
	kernelPath = "plugins/cuda-wmma/kernel.cu"
	// The tunables: warps per block, 16 query rows each, and keys per
	// K/V tile.
	warpsPerBlock = "warps"
	tileN         = "tile_n"
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
			Name:         name,
			Description:  "WMMA 16x16x16 tensor cores for Q·Kᵀ and P·V, 16 query rows per warp, 32-key tiles; warps and tile_n tunable",
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
// operands) and other head dims (instantiated for 64 and 128 only).
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
		Name:        warpsPerBlock,
		Values:      []string{"1", "2", "4", "8"},
		Default:     "4",
		Description: "warps per block, 16 query rows each (16 to 128 rows per block)",
	},
	{
		Name:        tileN,
		Values:      []string{"16", "32"},
		Default:     "32",
		Description: "keys per K/V tile staged in shared memory",
	},
}

// plan: each warp owns 16 query rows; static shared memory only (under
// 48 KB for every instantiation).
func plan(shape sdk.Shape, t map[string]string) (cudakit.Launch, error) {
	warps, err := strconv.Atoi(t[warpsPerBlock])
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", warpsPerBlock, err)
	}
	if _, err := strconv.Atoi(t[tileN]); err != nil {
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", tileN, err)
	}
	grid, err := cudakit.AttentionGrid(shape, 16*warps)
	if err != nil {
		return cudakit.Launch{}, err
	}
	return cudakit.Launch{
		Function: cudakit.KernelName(shape.DType, shape.HeadDim, "warps"+t[warpsPerBlock], "n"+t[tileN]),
		Grid:     grid,
		Block:    gpu.Dim3{X: warps * 32, Y: 1, Z: 1},
	}, nil
}
