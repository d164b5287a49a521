package cudawmma

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
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
			Description:  "WMMA 16x16x16 tensor cores for Q·Kᵀ and P·V, 16 query rows per warp, 32-key tiles; warps and tile_n tunable; backward in two kernels (dK and dV, then dQ)",
			Capabilities: capabilities,
			Tunables:     tunables,
		},
		Kernel: cudakit.KernelFiles{
			Fatbin:   fatbin,
			Manifest: manifest,
			Sources:  cudakit.Sources(kernelPath, kernelSource),
		},
		Plan:      plan,
		ModePlans: map[sdk.Mode]cudakit.OpPlan{sdk.Backward: planBackward},
	}
}

// capabilities: fp16 and bf16 at head dims 64 and 128, with every masking
// and shape option, forward and backward. Not supported: fp32 inputs (WMMA
// takes half and bf16 operands), other head dims (instantiated for 64 and
// 128 only) and fwd+bwd (the forward does not write the row log-sum-exp a
// backward needs).
var capabilities = sdk.Capabilities{
	DTypes:            []sdk.DType{sdk.FP16, sdk.BF16},
	HeadDims:          []int{64, 128},
	Causal:            true,
	NonCausal:         true,
	GroupedQueryHeads: true,
	UnequalSeqLens:    true,
	NeedsGPU:          true,
	Modes:             []sdk.Mode{sdk.Forward, sdk.Backward},
}

// The tunables shape the forward kernel; a backward case is planned the
// same whatever their values.
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

// backwardBlocks are the backward kernels' blocks at one head dim (kernel.cu
// instantiates the same): the dK/dV kernel's keys per block (16 per warp)
// and query rows per step, and the dQ kernel's query rows per block (16
// per warp) and keys per step. At D128 the dK/dV kernel takes 32 keys: its
// K and V tiles, the staged Q and dO and the warps' score tiles must fit
// 48 KB of static shared memory.
type backwardBlocks struct {
	dkdvKeys, dkdvRows int
	dqRows, dqKeys     int
}

var backwardBlocksByHeadDim = map[int]backwardBlocks{
	64:  {dkdvKeys: 64, dkdvRows: 32, dqRows: 64, dqKeys: 32},
	128: {dkdvKeys: 32, dkdvRows: 32, dqRows: 64, dqKeys: 32},
}

// planBackward: the dK/dV kernel over key blocks of every key/value head,
// then the dQ kernel over query blocks of every head, in one call, each
// writing its outputs once (no atomics, no scratch). Both take the mode's
// tensors in order (q, k, v, o, do, lse, dq, dk, dv), then heads,
// kv_heads, seq_q, seq_k, causal and the softmax scale.
func planBackward(c cudakit.OpCase, _ map[string]string) (cudakit.Launch, error) {
	s := attention.ShapeFrom(c.Params)
	blocks, ok := backwardBlocksByHeadDim[s.HeadDim]
	if !ok {
		return cudakit.Launch{}, fmt.Errorf("head dim %d: the backward is instantiated for 64 and 128", s.HeadDim)
	}
	dkdvGrid, err := cudakit.KeyGrid(s, blocks.dkdvKeys)
	if err != nil {
		return cudakit.Launch{}, err
	}
	dqGrid, err := cudakit.AttentionGrid(s, blocks.dqRows)
	if err != nil {
		return cudakit.Launch{}, err
	}
	causal := int32(0)
	if s.Causal {
		causal = 1
	}
	params := cudakit.TensorParams(c, gpu.Int32(int32(s.Heads)), gpu.Int32(int32(s.KVHeads)),
		gpu.Int32(int32(s.SeqQ)), gpu.Int32(int32(s.SeqK)), gpu.Int32(causal), gpu.Float32(float32(s.Scale())))
	return cudakit.Launch{
		Function: cudakit.ModeKernelName(sdk.Backward, s.DType, s.HeadDim, "dkdv", fmt.Sprintf("k%d", blocks.dkdvKeys), fmt.Sprintf("q%d", blocks.dkdvRows)),
		Grid:     dkdvGrid,
		Block:    gpu.Dim3{X: blocks.dkdvKeys / 16 * 32, Y: 1, Z: 1},
		Params:   params,
		Then: []cudakit.Launch{{
			Function: cudakit.ModeKernelName(sdk.Backward, s.DType, s.HeadDim, "dq", fmt.Sprintf("q%d", blocks.dqRows), fmt.Sprintf("k%d", blocks.dqKeys)),
			Grid:     dqGrid,
			Block:    gpu.Dim3{X: blocks.dqRows / 16 * 32, Y: 1, Z: 1},
			Params:   params,
		}},
	}, nil
}
