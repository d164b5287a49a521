package main

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/flashcore/bench/internal/cudabackend"
	"github.com/flashcore/bench/internal/gpu"
	"github.com/flashcore/bench/sdk"
)

const (
	name    = "cuda-scalar"
	version = "0.1.0"
	// kernelPath is kernel.cu's repository path, as the manifest names it.
	kernelPath = "plugins/cuda-scalar/kernel.cu"
	// rowsPerBlock is the tunable: query rows (one warp each) per block.
	rowsPerBlock = "rows_per_block"
)

//go:embed kernel.cu
var kernelSource []byte

// New is the plugin's backend.
func New() sdk.Backend { return cudabackend.New(spec()) }

func spec() cudabackend.Spec {
	return cudabackend.Spec{
		Name:    name,
		Version: version,
		Variant: sdk.Variant{
			Name:         name,
			Description:  "online softmax in fp32 on CUDA cores, one warp per query row",
			Capabilities: capabilities,
			Tunables:     tunables,
		},
		Kernel: cudabackend.KernelFiles{
			Fatbin:   fatbin,
			Manifest: manifest,
			Sources:  cudabackend.Sources(kernelPath, kernelSource),
		},
		Plan: plan,
	}
}

// capabilities: fp16 and bf16 at head dims 64 and 128, with every masking
// and shape option. Not supported: fp32 inputs and other head dims (the
// kernel is instantiated for 64 and 128 only).
var capabilities = sdk.Capabilities{
	DTypes:            []sdk.DType{sdk.FP16, sdk.BF16},
	HeadDims:          []int{64, 128},
	Causal:            true,
	NonCausal:         true,
	GroupedQueryHeads: true,
	UnequalSeqLens:    true,
	NeedsGPU:          true,
}

var tunables = []sdk.Tunable{{
	Name:        rowsPerBlock,
	Values:      []string{"4", "8", "16"},
	Default:     "8",
	Description: "query rows per block, one warp each, sharing every K/V tile the block stages",
}}

// plan: one warp per query row, rows_per_block rows per block, static
// shared memory only.
func plan(shape sdk.Shape, t map[string]string) (cudabackend.Launch, error) {
	rows, err := strconv.Atoi(t[rowsPerBlock])
	if err != nil {
		return cudabackend.Launch{}, fmt.Errorf("tunable %s: %w", rowsPerBlock, err)
	}
	grid, err := cudabackend.AttentionGrid(shape, rows)
	if err != nil {
		return cudabackend.Launch{}, err
	}
	return cudabackend.Launch{
		Function: cudabackend.KernelName(shape.DType, shape.HeadDim, "rows"+t[rowsPerBlock]),
		Grid:     grid,
		Block:    gpu.Dim3{X: rows * 32, Y: 1, Z: 1},
	}, nil
}
