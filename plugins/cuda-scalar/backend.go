package cudascalar

import (
	_ "embed"
	"fmt"
	"math"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/rmsnorm"
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
func New() sdk.Backend { return cudakit.New(spec()) }

func spec() cudakit.Spec {
	return cudakit.Spec{
		Name:    name,
		Version: version,
		Variant: sdk.Variant{
			Name:           name,
			Description:    "online softmax in fp32 on CUDA cores, one warp per query row; rmsnorm with one block per row",
			Ops:            []string{attention.Name, rmsnorm.Name},
			Capabilities:   capabilities,
			OpCapabilities: map[string]sdk.Capabilities{rmsnorm.Name: rmsnormCapabilities},
			Tunables:       tunables,
		},
		Kernel: cudakit.KernelFiles{
			Fatbin:   fatbin,
			Manifest: manifest,
			Sources:  cudakit.Sources(kernelPath, kernelSource),
		},
		Plan: plan,
		Ops:  map[string]cudakit.OpPlan{rmsnorm.Name: planRMSNorm},
	}
}

// capabilities are attention's: fp16 and bf16 at head dims 64 and 128,
// with every masking and shape option. Not supported: fp32 inputs and
// other head dims (the kernel is instantiated for 64 and 128 only).
var capabilities = sdk.Capabilities{
	DTypes:            []sdk.DType{sdk.FP16, sdk.BF16},
	HeadDims:          []int{64, 128},
	Causal:            true,
	NonCausal:         true,
	GroupedQueryHeads: true,
	UnequalSeqLens:    true,
	NeedsGPU:          true,
}

// rmsnormCapabilities: every dtype, any size; rmsnorm has a kernel for
// fp32 as well as for the half types.
var rmsnormCapabilities = sdk.Capabilities{
	DTypes:   []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
	NeedsGPU: true,
}

var tunables = []sdk.Tunable{{
	Name:        rowsPerBlock,
	Values:      []string{"4", "8", "16"},
	Default:     "8",
	Description: "query rows per block, one warp each, sharing every K/V tile the block stages",
	Ops:         []string{attention.Name},
}}

// plan: one warp per query row, rows_per_block rows per block, static
// shared memory only.
func plan(shape sdk.Shape, t map[string]string) (cudakit.Launch, error) {
	rows, err := strconv.Atoi(t[rowsPerBlock])
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", rowsPerBlock, err)
	}
	grid, err := cudakit.AttentionGrid(shape, rows)
	if err != nil {
		return cudakit.Launch{}, err
	}
	return cudakit.Launch{
		Function: cudakit.KernelName(shape.DType, shape.HeadDim, "rows"+t[rowsPerBlock]),
		Grid:     grid,
		Block:    gpu.Dim3{X: rows * 32, Y: 1, Z: 1},
	}, nil
}

// rmsnormMaxThreads bounds an rmsnorm block: a CUDA block holds at most 1024
// threads, and a longer row is looped over.
const rmsnormMaxThreads = 1024

// planRMSNorm: one block per row of x; its threads take 16-byte loads
// (8 halves or 4 floats) where that many elements divide cols, so every
// row starts aligned, else one element each; enough whole warps for one
// load each, up to rmsnormMaxThreads. The kernel takes x, weight, y, rows
// and cols.
func planRMSNorm(c cudakit.OpCase, _ map[string]string) (cudakit.Launch, error) {
	x, ok := c.Tensor("x")
	if !ok || len(x.Dims) != 2 {
		return cudakit.Launch{}, fmt.Errorf("%w: rmsnorm without x[rows, cols]", cudakit.ErrInvalidPlan)
	}
	rows, cols := x.Dims[0], x.Dims[1]
	if rows > cudakit.MaxGridX || cols > math.MaxInt32 {
		return cudakit.Launch{}, fmt.Errorf("x[%d, %d]: the kernel takes at most %d rows and %d cols", rows, cols, cudakit.MaxGridX, math.MaxInt32)
	}
	vec := 16 / x.DType.Size()
	if cols%vec != 0 {
		vec = 1
	}
	threads := min(rmsnormMaxThreads, (cols/vec+31)/32*32)
	return cudakit.Launch{
		Function: cudakit.OpKernelName(rmsnorm.Name, x.DType, "v"+strconv.Itoa(vec)),
		Grid:     gpu.Dim3{X: rows, Y: 1, Z: 1},
		Block:    gpu.Dim3{X: threads, Y: 1, Z: 1},
		Params:   cudakit.TensorParams(c, gpu.Int32(int32(rows)), gpu.Int32(int32(cols))),
	}, nil
}
