package cudahopper

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

const (
	name    = "cuda-hopper"
	version = "0.2.0"
	// kernelPath is kernel.cu's repository path, as the manifest names it.
	kernelPath = "plugins/cuda-hopper/kernel.cu"
	// Tunables: keys per K/V tile, K/V stages in the shared-memory ring,
	// whether a tile's softmax overlaps its neighbours' MMAs, and how the
	// producer tells the consumers a stage has landed.
	tileN    = "tile_n"
	kvStages = "kv_stages"
	overlap  = "overlap"
	producer = "producer"
	// kernelChoice picks attention's kernel: the wgmma kernel, the split
	// kernel (decode's flash-decoding, on attention's layout), or auto.
	kernelChoice = "kernel"
	kernelAuto   = "auto"
	kernelWGMMA  = "wgmma"
	kernelSplit  = "split"
	// producerTMA is producer's value whose copies are TMA's.
	producerTMA = "tma"
	// producerPersistent is the TMA producer on a persistent grid: one
	// block an SM, taking tile after tile.
	producerPersistent = "tma-persistent"
	// tileCounter is the persistent schedule's scratch: the work list's
	// next tile, zeroed before every call.
	tileCounter = "tile_counter"
)

// The kernel's fixed shape: a producer warpgroup and two consumer
// warpgroups of 64 query rows each.
const (
	tileM   = 128
	threads = 384
)

//go:embed kernel.cu
var kernelSource []byte

// New is the plugin's backend.
func New() sdk.Backend { return cudakit.New(spec()) }

func spec() cudakit.Spec {
	s := cudakit.Spec{
		Name:    name,
		Version: version,
		Variant: sdk.Variant{
			Name: name,
			Description: "sm_90a: wgmma for Q·Kᵀ and P·V, producer/consumer warpgroups with setmaxnreg, " +
				"TMA for Q, K, V and O with a K/V ring on mbarriers, consumers taking turns at the tensor cores, " +
				"128-byte swizzled shared memory, 128-row tiles; few query rows: the split-KV kernel; " +
				"decode: split-KV paged flash-decoding with mma.sync, GQA rows packed per KV head, and a combine kernel",
			Ops:            []string{attention.Name, decodeOp},
			Capabilities:   capabilities,
			OpCapabilities: map[string]sdk.Capabilities{decodeOp: decodeCapabilities},
			Tunables:       slices.Concat(tunables, decodeTunables),
		},
		Kernel: cudakit.KernelFiles{
			Fatbin:   fatbin,
			Manifest: manifest,
			Sources:  cudakit.Sources(kernelPath, kernelSource),
		},
		Plan:   plan,
		Ops:    map[string]cudakit.OpPlan{decodeOp: planDecode},
		Device: requireHopper,
	}
	return s
}

// capabilities: fp16 and bf16 at head dims 64 and 128, with every masking
// and shape option. Not supported: fp32 inputs (wgmma's fp16/bf16 forms)
// and other head dims (instantiated for 64 and 128 only).
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
		Name:        tileN,
		Values:      []string{"64", "128"},
		Default:     "128",
		Description: "keys per K/V tile (the N of the Q·Kᵀ wgmma)",
		Ops:         []string{attention.Name},
	},
	{
		Name:        kvStages,
		Values:      []string{"2", "3"},
		Default:     "2",
		Description: "K/V stages in the shared-memory ring between the producer and the consumers (tma producers: in each of K's ring and V's)",
		Ops:         []string{attention.Name},
	},
	{
		Name:    overlap,
		Values:  []string{"0", "1", "2"},
		Default: "1",
		Description: "1: softmax of tile t runs while P·V of tile t-1 is on the tensor cores; " +
			"2: as 1, and the two consumer warpgroups take turns issuing their MMAs; 0: each tile in order",
		Ops: []string{attention.Name},
	},
	{
		Name:    producer,
		Values:  []string{"wait", "ahead", producerTMA, producerPersistent},
		Default: producerPersistent,
		Description: "wait: the producer waits for each tile's copies before the next (one tile in flight); " +
			"ahead: the copies arrive on the stage's mbarrier as they land (up to kv_stages tiles in flight); " +
			"tma: one producer thread issues TMA bulk tensor copies (cp.async.bulk.tensor), which complete on the mbarrier; " +
			"tma-persistent: tma on a persistent grid, one block an SM taking 128-row tiles from a counter, in groups of heads whose K/V fit 16 MB of L2, longest first within a group, " +
			"its producer loading the next tile's K, V and Q while its consumers finish the tile before and store its O",
		Ops: []string{attention.Name},
	},
	{
		Name:    kernelChoice,
		Values:  []string{kernelAuto, kernelWGMMA, kernelSplit},
		Default: kernelAuto,
		Description: "wgmma: the warp-specialised kernel, 128 query rows of a head a block; " +
			"split: decode's split-KV kernel (flash-decoding), the query rows of a KV head packed 16 a block and the keys split over blocks, " +
			"then a combine kernel (num_splits, decode_tile_n and decode_stages set it up); " +
			"auto: split where a head has at most " + strconv.Itoa(splitMaxRows) + " query rows or the wgmma kernel would have at most " +
			strconv.Itoa(splitMaxBlocks) + " blocks (a quarter of 132 SMs), else wgmma",
		Ops: []string{attention.Name},
	},
}

// requireHopper refuses every device but compute capability 9.0: wgmma and
// setmaxnreg exist only in the sm_90a instruction set, whose cubins run on
// Hopper alone.
func requireHopper(d gpu.DeviceInfo) error {
	if d.Major != 9 || d.Minor != 0 {
		return fmt.Errorf("%s needs a Hopper GPU (compute capability 9.0, sm_90a); %s has %s",
			name, d.Name, d.ComputeCapability())
	}
	return nil
}

func plan(shape sdk.Shape, t map[string]string) (cudakit.Launch, error) {
	switch choice := t[kernelChoice]; {
	case choice == kernelSplit || (choice == kernelAuto || choice == "") && splitFits(shape):
		return planSplit(shape, t)
	case choice != kernelWGMMA && choice != kernelAuto && choice != "":
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %q is not %s, %s or %s", kernelChoice, choice, kernelAuto, kernelWGMMA, kernelSplit)
	}
	n, err := strconv.Atoi(t[tileN])
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", tileN, err)
	}
	stages, err := strconv.Atoi(t[kvStages])
	if err != nil {
		return cudakit.Launch{}, fmt.Errorf("tunable %s: %w", kvStages, err)
	}
	if t[producer] == producerPersistent {
		return planPersistent(shape, t, n, stages)
	}
	grid, err := cudakit.AttentionGrid(shape, tileM)
	if err != nil {
		return cudakit.Launch{}, err
	}
	l := cudakit.Launch{
		Function:           cudakit.KernelName(shape.DType, shape.HeadDim, "n"+t[tileN], "s"+t[kvStages], "o"+t[overlap], t[producer]),
		Grid:               grid,
		Block:              gpu.Dim3{X: threads, Y: 1, Z: 1},
		DynamicSharedBytes: sharedBytes(shape.DType.Size(), shape.HeadDim, n, stages),
	}
	if t[producer] == producerTMA {
		l.Params = tmaParams(shape, n)
	}
	return l, nil
}

// planPersistent is the TMA kernel on a persistent grid: at most one block
// an SM of an H100 (hopperSMs; a device with fewer SMs runs the rest as
// they free, and the counter hands out the work), the TMA kernel's
// parameters, then the batch and the tile counter, a zeroed int.
func planPersistent(shape sdk.Shape, t map[string]string, n, stages int) (cudakit.Launch, error) {
	tiles := int64(ceilDiv(shape.SeqQ, tileM)) * int64(shape.Batch) * int64(shape.Heads)
	if tiles > math.MaxInt32 {
		return cudakit.Launch{}, fmt.Errorf("%d query tiles: the persistent schedule counts them in 32 bits", tiles)
	}
	return cudakit.Launch{
		Function: cudakit.KernelName(shape.DType, shape.HeadDim, "n"+t[tileN], "s"+t[kvStages], "o"+t[overlap],
			"tma", "persistent"),
		Grid:               gpu.Dim3{X: int(min(tiles, hopperSMs)), Y: 1, Z: 1},
		Block:              gpu.Dim3{X: threads, Y: 1, Z: 1},
		DynamicSharedBytes: persistentSharedBytes(shape.DType.Size(), shape.HeadDim, n, stages),
		Params: append(tmaParams(shape, n),
			cudakit.ValueParam(gpu.Int32(int32(shape.Batch))), cudakit.BufferParam(tileCounter)),
		Scratch: []cudakit.Scratch{{Name: tileCounter, Bytes: 4, Reset: true, Word: 0}},
	}, nil
}

// tmaParams are the producer = tma kernel's parameters: the standard list
// (cudakit.AttentionParams), then tensor maps of Q, K, V and O, each in
// boxes of 64 elements (one 128-byte swizzled column block): Q as [B·H,
// seq_q, D] in the block's 128 rows, K and V as [B·KVH, seq_k, D] in tileN
// keys, O as Q in each consumer's 64 rows.
func tmaParams(shape sdk.Shape, tileN int) []cudakit.Param {
	tensorMap := func(name string, rows, heads, box int) cudakit.Param {
		return cudakit.TensorMapParam(cudakit.TensorMap{
			Buffer: name, DType: shape.DType,
			Dims: []uint64{uint64(shape.HeadDim), uint64(rows), uint64(shape.Batch) * uint64(heads)},
			Box:  []uint32{64, uint32(box), 1},
		})
	}
	kv := func(name string) cudakit.Param { return tensorMap(name, shape.SeqK, shape.KVHeads, tileN) }
	return append(cudakit.AttentionParams(shape),
		tensorMap("q", shape.SeqQ, shape.Heads, tileM), kv("k"), kv("v"), tensorMap("o", shape.SeqQ, shape.Heads, tileM/2))
}

// sharedBytes mirrors HopperLayout in kernel.cu: the Q tile, K and V tiles
// per stage, a full and an empty mbarrier (8 bytes each) per stage for K's
// ring and for V's (the TMA kernels'; the others use K's alone), and 1024
// bytes of slack to align the base to the 128-byte swizzle's 1024-byte atom.
// The kernel traps if launched with less.
func sharedBytes(elemSize, headDim, tileN, stages int) int {
	q := tileM * headDim * elemSize
	kvStage := tileN * headDim * elemSize
	return q + 2*stages*kvStage + 4*stages*8 + 1024
}

// maxSharedBytes is an H100 SM's dynamic shared memory for one block
// (kMaxSharedBytes in kernel.cu).
const maxSharedBytes = 227 * 1024

// persistentSharedBytes mirrors HopperLayout with PERSIST: sharedBytes and,
// where it fits, an O tile of Q's size (kOwnO).
func persistentSharedBytes(elemSize, headDim, tileN, stages int) int {
	b := sharedBytes(elemSize, headDim, tileN, stages)
	if o := tileM * headDim * elemSize; b+o <= maxSharedBytes {
		return b + o
	}
	return b
}

// Auto's choice of the split kernel, measured on an H100 (hot L2, CUPTI,
// docs/results/2026-11-27-h100-split-kernel):
//
//   - A head with at most splitMaxRows query rows (a decode step to
//     speculative decoding): a wgmma block takes 128 rows of one head, so
//     it computes mostly padding; the split kernel packs a KV head's rows
//     (GQA) 16 a block and splits the keys until the SMs are busy. B3 H5/1
//     S1×8191 D128: 10.4 µs against 156; B32 H32/8 S1×4096: 176 against 590.
//   - A wgmma grid of at most splitMaxBlocks blocks: it leaves most SMs
//     idle, while the split kernel's 16-row blocks fill them. B1 H8 S512 D64
//     (32 blocks): 7.2 µs against 10.8; B1 H8 S512×16384 (32): 131 against
//     235; B1 H8 S64×32768 D128 (8): 66 against 571. At 64 blocks the two
//     were even or wgmma led (B1 H8 S1024 D64 18.0 against 18.5, B2 H8 S512
//     D128 14.4 against 20.4), at 128 wgmma led by 1.7–2×.
//
// Those wgmma figures are the cp.async producer's. TMA (the default since)
// made the wgmma kernel 1.0–1.07× faster at D64 and 1.2–1.3× at D128
// (docs/results/2026-11-27-h100-tma), less than the split kernel's lead in
// every case measured at 32 blocks or fewer (1.5× and more), so the line stays.
const (
	splitMaxRows   = 16
	splitMaxBlocks = hopperSMs / 4
)

// splitFits is auto's choice of the split kernel.
func splitFits(shape sdk.Shape) bool {
	wgmmaBlocks := int64(shape.Batch) * int64(shape.Heads) * int64(ceilDiv(shape.SeqQ, tileM))
	return shape.SeqQ <= splitMaxRows || wgmmaBlocks <= splitMaxBlocks
}

// planSplit plans attention forward on the split kernel: the dense tensors
// as decode's, one page of seq_k keys per sequence and KV head.
func planSplit(shape sdk.Shape, t map[string]string) (cudakit.Launch, error) {
	kvHeads := shape.KVHeads
	switch {
	case kvHeads < 1 || shape.Heads%kvHeads != 0:
		return cudakit.Launch{}, fmt.Errorf("heads %d is not a multiple of kv_heads %d", shape.Heads, kvHeads)
	case shape.Batch > 65535 || kvHeads > 65535:
		return cudakit.Launch{}, fmt.Errorf("batch %d and kv_heads %d: the grid takes at most 65535 of each", shape.Batch, kvHeads)
	case int64(shape.Batch)*int64(shape.Heads)*int64(shape.SeqQ) > math.MaxInt32:
		return cudakit.Launch{}, fmt.Errorf("%d output rows: the split kernel counts them in int32", shape.Batch*shape.Heads*shape.SeqQ)
	}
	d := decodeCase{
		dtype: shape.DType, batch: shape.Batch, qLen: shape.SeqQ, heads: shape.Heads, kvHeads: kvHeads, dim: shape.HeadDim,
		numPages: shape.Batch * kvHeads, pageSize: shape.SeqK, maxPages: 1,
		causal: shape.Causal, windowLeft: -1, scale: shape.Scale(), dense: true,
	}
	return d.launch(t)
}
