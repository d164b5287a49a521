package cudahopper

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// decodeOp is the op `decode` (package ops/decode): attention of a few new
// query tokens per sequence over a paged KV cache, FlashAttention's
// flash_attn_with_kvcache layout. kernel.cu runs it as flash-decoding: a
// split-KV kernel, then, with more than one split, a combine kernel.
const decodeOp = "decode"

// decode's tensors, by their names in the op.
const (
	decodeQ            = "q"
	decodeKCache       = "k_cache"
	decodeVCache       = "v_cache"
	decodeBlockTable   = "block_table"
	decodeCacheSeqlens = "cache_seqlens"
	decodeO            = "o"
	// The scratch buffers of a call with several splits.
	decodeOPart   = "o_part"
	decodeLSEPart = "lse_part"
)

// int32DType is the element type of block_table and cache_seqlens.
const int32DType = sdk.INT32

// decode's tunables (they apply to decode alone).
const (
	numSplits    = "num_splits"
	decodeTileN  = "decode_tile_n"
	decodeStages = "decode_stages"
	// autoSplits is num_splits' value that leaves the count to the heuristic.
	autoSplitsValue = "auto"
)

// The split kernel's fixed shape, as kernel.cu has it (paged_decode).
const (
	decodeThreads   = 128 // four warps
	decodeRows      = 16  // packed query rows a block: one m16 tile
	decodeMinBlocks = 3   // __launch_bounds__'s minimum blocks per SM
	combineRows     = 4   // output rows a combine block, a warp each
)

// What the heuristic assumes of the device: the plan does not see it, and
// the plugin runs on Hopper alone (requireHopper). H100 SXM and H200 have
// 132 SMs (H100 PCIe 114: the heuristic then over-splits a little), 228 KiB
// of shared memory per SM and 227 KiB per block, 1 KiB of it reserved per
// block.
const (
	hopperSMs             = 132
	hopperSharedPerSM     = 228 * 1024
	hopperSharedPerBlock  = 227 * 1024
	hopperSharedReserved  = 1024
	decodeMaxSplits       = 128 // no more splits than this, whatever asked
	decodeMinTilesInSplit = 2   // auto: each split walks at least this many key tiles
	decodeShortTiles      = 16  // auto: a walk this short is not split once the SMs are busy
)

// decodeCapabilities: fp16 and bf16 at head dims 64 and 128, causal (bottom-
// right) and not, grouped heads, any page size, q_len and context length,
// sliding windows and softcap. Not supported: fp32 (the kernels run
// mma.sync on 16-bit operands; fp32 cases are skipped) and other head dims.
var decodeCapabilities = sdk.Capabilities{
	DTypes:            []sdk.DType{sdk.FP16, sdk.BF16},
	HeadDims:          []int{64, 128},
	Causal:            true,
	NonCausal:         true,
	GroupedQueryHeads: true,
	NeedsGPU:          true,
	// The kernels take window_left and softcap.
	Masks: []string{sdk.MaskWindow, sdk.MaskSoftcap},
}

var decodeTunables = []sdk.Tunable{
	{
		Name:    numSplits,
		Values:  []string{autoSplitsValue, "1", "2", "4", "8", "16", "32", "64"},
		Default: autoSplitsValue,
		Description: "key splits per sequence (flash-decoding): auto picks from the grid's fill of 132 SMs; " +
			"1 writes O directly, more add a combine kernel (attention: with the split kernel)",
		Ops: []string{attention.Name, decodeOp},
	},
	{
		Name:        decodeTileN,
		Values:      []string{"64", "128"},
		Default:     "64",
		Description: "keys per K/V tile of the split kernel (a quarter to each warp; attention: with the split kernel)",
		Ops:         []string{attention.Name, decodeOp},
	},
	{
		Name:        decodeStages,
		Values:      []string{"2", "3"},
		Default:     "3",
		Description: "K/V tiles in the split kernel's cp.async ring (stages-1 in flight while one is computed; attention: with the split kernel)",
		Ops:         []string{attention.Name, decodeOp},
	},
}

// decodeCase is what the plan reads of a decode case: the sizes from the
// tensor files (Prepare has checked them against the op's params), the
// masking from the params.
type decodeCase struct {
	dtype                            sdk.DType
	batch, qLen, heads, kvHeads, dim int
	numPages, pageSize, maxPages     int
	contextLen                       int    // the longest context; 0: unknown
	dist                             string // context_dist
	causal                           bool
	windowLeft                       int     // -1: no window
	softcap                          float64 // 0: none
	scale                            float64
	// dense is attention forward run by the split kernel (planSplit): q and
	// o [B, H, q_len, D], K and V [B, KVH, seq_k, D] as one page of seq_k
	// keys per sequence and KV head, no block table, causal top-left.
	dense bool
}

// readDecodeCase reads and checks a decode case. A tensor missing or of
// the wrong rank is the plan's fault (Prepare checked the files against the
// op); anything else is a case the kernels cannot run.
func readDecodeCase(c cudakit.OpCase) (decodeCase, error) {
	var d decodeCase
	dims := map[string][]int{}
	// In the op's order, so that the first tensor missing is the one named.
	for _, want := range []struct {
		name string
		rank int
	}{{decodeQ, 4}, {decodeKCache, 4}, {decodeVCache, 4}, {decodeBlockTable, 2}, {decodeCacheSeqlens, 1}, {decodeO, 4}} {
		t, ok := c.Tensor(want.name)
		if !ok || len(t.Dims) != want.rank {
			return d, fmt.Errorf("%w: decode without %s of rank %d", cudakit.ErrInvalidPlan, want.name, want.rank)
		}
		dims[want.name] = t.Dims
	}
	q, _ := c.Tensor(decodeQ)
	d.dtype = q.DType
	d.batch, d.qLen, d.heads, d.dim = q.Dims[0], q.Dims[1], q.Dims[2], q.Dims[3]
	k := dims[decodeKCache]
	d.numPages, d.pageSize, d.kvHeads = k[0], k[1], k[2]
	d.maxPages = dims[decodeBlockTable][1]
	for _, name := range []string{decodeKCache, decodeVCache, decodeO} {
		if t, _ := c.Tensor(name); t.DType != d.dtype {
			return d, fmt.Errorf("%s is %s and q %s: the kernels take one dtype", name, t.DType, d.dtype)
		}
	}
	for _, name := range []string{decodeBlockTable, decodeCacheSeqlens} {
		if t, _ := c.Tensor(name); t.DType != int32DType {
			return d, fmt.Errorf("%s is %s: the kernels read int32", name, t.DType)
		}
	}
	switch {
	case d.dtype != sdk.FP16 && d.dtype != sdk.BF16:
		return d, fmt.Errorf("dtype %s: the decode kernels are built for fp16 and bf16", d.dtype)
	case d.dim != 64 && d.dim != 128:
		return d, fmt.Errorf("head dim %d: the decode kernels are built for 64 and 128", d.dim)
	case d.kvHeads < 1 || d.heads%d.kvHeads != 0:
		return d, fmt.Errorf("heads %d is not a multiple of kv_heads %d", d.heads, d.kvHeads)
	case k[3] != d.dim || !slices.Equal(dims[decodeVCache], k) || !slices.Equal(dims[decodeO], q.Dims) ||
		dims[decodeBlockTable][0] != d.batch || dims[decodeCacheSeqlens][0] != d.batch:
		return d, fmt.Errorf("%w: decode tensors that do not agree: %v", cudakit.ErrInvalidPlan, dims)
	case d.batch > 65535 || d.kvHeads > 65535:
		return d, fmt.Errorf("batch %d and kv_heads %d: the grid takes at most 65535 of each", d.batch, d.kvHeads)
	case int64(d.maxPages)*int64(d.pageSize) > math.MaxInt32 || int64(d.batch)*int64(d.qLen)*int64(d.heads) > math.MaxInt32:
		return d, fmt.Errorf("max_pages %d × page_size %d or %d output rows: the kernels count in int32", d.maxPages, d.pageSize, d.batch*d.qLen*d.heads)
	}
	var err error
	if d.causal, err = boolParam(c, "causal", true); err != nil {
		return d, err
	}
	if d.windowLeft, err = intParam(c, "window_left", -1); err != nil {
		return d, err
	}
	if d.windowLeft < -1 {
		return d, fmt.Errorf("window_left %d: want -1 (none) or a count of keys", d.windowLeft)
	}
	if d.softcap, err = floatParam(c, "softcap", 0); err != nil {
		return d, err
	}
	if d.softcap < 0 || math.IsInf(d.softcap, 0) {
		return d, fmt.Errorf("softcap %v: want 0 (none) or a positive cap", d.softcap)
	}
	if d.scale, err = floatParam(c, "scale", 1/math.Sqrt(float64(d.dim))); err != nil {
		return d, err
	}
	if d.contextLen, err = intParam(c, "context_len", 0); err != nil {
		return d, err
	}
	d.dist = c.Params["context_dist"]
	return d, nil
}

func boolParam(c cudakit.OpCase, name string, def bool) (bool, error) {
	s, ok := c.Params[name]
	if !ok || s == "" {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return def, fmt.Errorf("param %s: %q is not true or false", name, s)
	}
	return v, nil
}

func intParam(c cudakit.OpCase, name string, def int) (int, error) {
	s, ok := c.Params[name]
	if !ok || s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return def, fmt.Errorf("param %s: %q is not an integer", name, s)
	}
	return v, nil
}

func floatParam(c cudakit.OpCase, name string, def float64) (float64, error) {
	s, ok := c.Params[name]
	if !ok || s == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return def, fmt.Errorf("param %s: %q is not a number", name, s)
	}
	return v, nil
}

// rows is the output rows, B·q_len·H, and rowsPerKVHead the query rows one
// KV head's blocks pack: q_len·(H/KVH).
func (d decodeCase) rows() int          { return d.batch * d.qLen * d.heads }
func (d decodeCase) rowsPerKVHead() int { return d.qLen * d.heads / d.kvHeads }

// rowBlocks is the blocks one (sequence, KV head, split) takes: sixteen
// packed rows each.
func (d decodeCase) rowBlocks() int { return ceilDiv(d.rowsPerKVHead(), decodeRows) }

// visibleKeys bounds the keys the queries of one sequence see together, which
// the splits share out: the longest context (context_len, else what the block
// table reaches), or with a window at most window_left + q_len.
func (d decodeCase) visibleKeys() int {
	n := d.maxPages * d.pageSize
	if d.contextLen > 0 && d.contextLen < n {
		n = d.contextLen
	}
	if d.windowLeft >= 0 {
		n = min(n, d.windowLeft+d.qLen)
	}
	if d.dense && d.causal {
		n = min(n, d.qLen) // top-left: the last query sees keys [0, q_len)
	}
	return max(n, 1)
}

// balanced says whether every sequence has the same length (context_dist
// equal, or one sequence): then a grid that fills the SMs once needs no
// split. Otherwise the splits also even out sequences of different lengths.
func (d decodeCase) balanced() bool {
	return d.batch == 1 || d.dist == "" || d.dist == "equal"
}

// decodeSharedBytes mirrors paged_decode::Layout in kernel.cu: the Q tile
// (16 rows) and STAGES K and V tiles of tileN rows, each row D elements.
func decodeSharedBytes(elemSize, headDim, tileN, stages int) int {
	return decodeRows*headDim*elemSize + 2*stages*tileN*headDim*elemSize
}

// decodeBlocksPerSM is how many split blocks of that much dynamic shared
// memory share an SM, as far as shared memory and the launch bounds' register
// budget allow.
func decodeBlocksPerSM(sharedBytes int) int {
	return max(1, min(decodeMinBlocks, hopperSharedPerSM/(sharedBytes+hopperSharedReserved)))
}

// autoSplits is the heuristic's split count (after FlashAttention's
// num_splits_heuristic): units are the split kernel's blocks without
// splitting (batch × KV heads × row blocks), tiles the key tiles of the
// longest visible range, sms the device's SMs and slots the blocks it holds
// at once.
//
//   - A split walks at least decodeMinTilesInSplit tiles, and there are at
//     most decodeMaxSplits: past that the partials and the combine cost more
//     than the parallelism buys.
//   - Sequences of one length whose blocks fill 80% of the slots already: 1.
//   - Blocks on 80% of the SMs already, each walking at most
//     decodeShortTiles tiles: 1. A split would shorten a short walk by less
//     than the combine kernel costs: on an H100 at dense B1 H8 S512 D64
//     (256 blocks, 8 tiles) one split took 7.2 µs and three 13.4 µs, while at
//     S512×16384 (256 tiles) three splits took 131 µs and one 144 µs.
//   - Otherwise the smallest count whose wave efficiency (blocks / slots
//     over its ceiling) is within 85% of the best count's.
//   - Sequences of different lengths: at least enough splits for four waves
//     of blocks, so that the scheduler evens out long and short ones (blocks
//     past a short sequence's end exit at once).
func autoSplits(units, tiles, sms, slots int, balanced bool) int {
	maxSplits := min(decodeMaxSplits, tiles/decodeMinTilesInSplit)
	if maxSplits <= 1 || units <= 0 || slots <= 0 {
		return 1
	}
	if balanced && units*10 >= slots*8 || units*10 >= sms*8 && tiles <= decodeShortTiles {
		return 1
	}
	efficiency := func(s int) float64 {
		waves := float64(units*s) / float64(slots)
		return waves / math.Ceil(waves)
	}
	best := 0.0
	for s := 1; s <= maxSplits; s++ {
		best = max(best, efficiency(s))
	}
	splits := 1
	for efficiency(splits) < 0.85*best {
		splits++
	}
	if !balanced {
		splits = max(splits, min(maxSplits, ceilDiv(4*slots, units)))
	}
	return splits
}

// decodeGeometry is how a decode case is cut up: splits of splitKeys keys
// (a multiple of the tile), the last taking what is left.
type decodeGeometry struct {
	splits, splitKeys int
}

// geometry resolves num_splits (auto or a count) to the splits the grid
// has: a count is rounded so that every split but the last walks whole
// tiles, and no split starts past the longest visible range.
func (d decodeCase) geometry(splitsTunable string, tileN, sharedBytes int) (decodeGeometry, error) {
	visible := d.visibleKeys()
	var splits int
	if splitsTunable == "" || splitsTunable == autoSplitsValue {
		units := d.batch * d.kvHeads * d.rowBlocks()
		splits = autoSplits(units, ceilDiv(visible, tileN), hopperSMs, hopperSMs*decodeBlocksPerSM(sharedBytes), d.balanced())
	} else {
		n, err := strconv.Atoi(splitsTunable)
		if err != nil || n < 1 {
			return decodeGeometry{}, fmt.Errorf("tunable %s: %q is not auto or a positive count", numSplits, splitsTunable)
		}
		splits = min(n, decodeMaxSplits)
	}
	splitKeys := ceilDiv(ceilDiv(visible, splits), tileN) * tileN
	return decodeGeometry{splits: ceilDiv(visible, splitKeys), splitKeys: splitKeys}, nil
}

// planDecode plans a decode case: the split kernel over (row blocks ×
// splits, KV heads, batch), and with more than one split the scratch for the
// partials and the combine kernel after it.
func planDecode(c cudakit.OpCase, t map[string]string) (cudakit.Launch, error) {
	d, err := readDecodeCase(c)
	if err != nil {
		return cudakit.Launch{}, err
	}
	return d.launch(t)
}

// maxScratchBytes bounds the partials a plan may ask for: a count of splits
// forced on a large case would otherwise allocate gigabytes of them.
const maxScratchBytes = 2 << 30

// launch is the split kernel's launch for the case (decode's, or dense
// attention's with d.dense), the combine kernel after it where there are
// several splits.
func (d decodeCase) launch(t map[string]string) (cudakit.Launch, error) {
	tileN, err := decodeTunableInt(t, decodeTileN, 64)
	if err != nil {
		return cudakit.Launch{}, err
	}
	stages, err := decodeTunableInt(t, decodeStages, 3)
	if err != nil {
		return cudakit.Launch{}, err
	}
	if tileN != 64 && tileN != 128 || stages != 2 && stages != 3 {
		return cudakit.Launch{}, fmt.Errorf("%s %d with %s %d: the kernels are built for tiles of 64 and 128 keys and 2 or 3 stages",
			decodeTileN, tileN, decodeStages, stages)
	}
	shared := decodeSharedBytes(d.dtype.Size(), d.dim, tileN, stages)
	if shared > hopperSharedPerBlock {
		return cudakit.Launch{}, fmt.Errorf("%s %d with %s %d at head dim %d needs %d bytes of shared memory; a Hopper block has at most %d",
			decodeTileN, tileN, decodeStages, stages, d.dim, shared, hopperSharedPerBlock)
	}
	geo, err := d.geometry(t[numSplits], tileN, shared)
	if err != nil {
		return cudakit.Launch{}, err
	}
	gridX := int64(d.rowBlocks()) * int64(geo.splits)
	if gridX > cudakit.MaxGridX {
		return cudakit.Launch{}, fmt.Errorf("%d row blocks × %d splits exceed the CUDA grid limit of %d", d.rowBlocks(), geo.splits, cudakit.MaxGridX)
	}
	rows := int64(d.rows())
	scratch := []cudakit.Scratch{
		// Not reset: the split kernel writes every row's LSE of every split
		// each call, and the combine reads a partial only where its LSE is
		// finite, so the poison Prepare fills them with is never read.
		{Name: decodeOPart, Bytes: rows * int64(geo.splits) * int64(d.dim) * 4},
		{Name: decodeLSEPart, Bytes: rows * int64(geo.splits) * 4},
	}
	if bytes := scratch[0].Bytes + scratch[1].Bytes; geo.splits > 1 && bytes > maxScratchBytes {
		return cudakit.Launch{}, fmt.Errorf("%d splits of %d output rows need %.1f GiB of partials, over the plan's %d GiB: ask for fewer splits",
			geo.splits, rows, float64(bytes)/(1<<30), maxScratchBytes>>30)
	}
	causal := int32(0)
	if d.causal {
		causal = 1
	}
	// Scores in log2 units: s·scale·log2(e), or with a softcap c,
	// c·tanh(s·scale/c)·log2(e) as tanh(s·(scale/c))·(c·log2(e)).
	scoreScale, softcapLog2 := d.scale*math.Log2E, 0.0
	if d.softcap > 0 {
		scoreScale, softcapLog2 = d.scale/d.softcap, d.softcap*math.Log2E
	}
	partials := cudakit.ValueParam(gpu.Pointer(0))
	lses := cudakit.ValueParam(gpu.Pointer(0))
	if geo.splits > 1 {
		partials, lses = cudakit.BufferParam(decodeOPart), cudakit.BufferParam(decodeLSEPart)
	}
	i32 := func(v int) cudakit.Param { return cudakit.ValueParam(gpu.Int32(int32(v))) }
	tile, ring := "n"+strconv.Itoa(tileN), "s"+strconv.Itoa(stages)
	split := cudakit.Launch{
		Function:           cudakit.OpKernelName(decodeOp, d.dtype, "d"+strconv.Itoa(d.dim), tile, ring),
		Grid:               gpu.Dim3{X: int(gridX), Y: d.kvHeads, Z: d.batch},
		Block:              gpu.Dim3{X: decodeThreads, Y: 1, Z: 1},
		DynamicSharedBytes: shared,
		Params: []cudakit.Param{
			cudakit.BufferParam(decodeQ), cudakit.BufferParam(decodeKCache), cudakit.BufferParam(decodeVCache),
			cudakit.BufferParam(decodeBlockTable), cudakit.BufferParam(decodeCacheSeqlens), cudakit.BufferParam(decodeO),
			partials, lses,
			i32(d.heads), i32(d.kvHeads), i32(d.qLen), i32(d.pageSize), i32(d.maxPages), i32(geo.splitKeys),
			cudakit.ValueParam(gpu.Int32(causal)), i32(d.windowLeft),
			cudakit.ValueParam(gpu.Float32(float32(scoreScale))), cudakit.ValueParam(gpu.Float32(float32(softcapLog2))),
		},
	}
	combine := cudakit.OpKernelName(decodeOp, d.dtype, "d"+strconv.Itoa(d.dim), "combine")
	if d.dense {
		// kernel.cu's SPLIT_KERNEL: attention's tensors, pages of seq_k keys.
		split.Function = cudakit.KernelName(d.dtype, d.dim, "split", tile, ring)
		split.Params = []cudakit.Param{
			cudakit.BufferParam("q"), cudakit.BufferParam("k"), cudakit.BufferParam("v"), cudakit.BufferParam("o"),
			partials, lses,
			i32(d.heads), i32(d.kvHeads), i32(d.qLen), i32(d.pageSize), i32(geo.splitKeys),
			cudakit.ValueParam(gpu.Int32(causal)), cudakit.ValueParam(gpu.Float32(float32(scoreScale))),
		}
		combine = cudakit.KernelName(d.dtype, d.dim, "combine")
	}
	if geo.splits == 1 {
		return split, nil
	}
	split.Scratch = scratch
	out := decodeO
	if d.dense {
		out = "o"
	}
	split.Then = []cudakit.Launch{{
		Function: combine,
		Grid:     gpu.Dim3{X: int(ceilDiv(rows, combineRows)), Y: 1, Z: 1},
		Block:    gpu.Dim3{X: combineRows * 32, Y: 1, Z: 1},
		Params: []cudakit.Param{
			cudakit.BufferParam(decodeOPart), cudakit.BufferParam(decodeLSEPart), cudakit.BufferParam(out),
			i32(int(rows)), i32(geo.splits),
		},
	}}
	return split, nil
}

// decodeTunableInt reads an integer tunable, its default where the request
// has none (a plan called directly, as the plan checks do).
func decodeTunableInt(t map[string]string, name string, def int) (int, error) {
	s, ok := t[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("tunable %s: %w", name, err)
	}
	return n, nil
}

func ceilDiv[I int | int64](a, b I) I { return (a + b - 1) / b }
