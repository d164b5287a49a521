package cpureference

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/flashcore/bench/sdk"
)

// This file is FlashAttention's forward algorithm on a CPU. The output of
// one query row is softmax(q·Kᵀ·scale)·V; instead of forming the whole row
// of scores, the keys are visited in blocks and three running quantities
// are kept per query row:
//
//	m: the largest score seen so far,
//	l: the sum of exp(score − m) over the keys seen so far,
//	o: the sum of exp(score − m)·v over the keys seen so far.
//
// When a block raises the maximum from m to m', the earlier terms were
// exponentiated against the wrong maximum, so l and o are multiplied by
// exp(m − m') before the block's own terms are added. After the last block,
// o/l is the output row. Query rows are grouped in tiles so that one block
// of K and V, once in cache, serves every row of the tile.

// tiling is how the forward pass splits its work; every field is a tunable
// (tunables.go). The split never changes a bit of the output: each output
// row is computed by one goroutine, over the keys in order.
type tiling struct {
	// queryRows is how many query rows share one pass over K and V. It is
	// also the unit of work handed to a goroutine.
	queryRows int
	// keyRows is how many key rows are scored before their softmax terms
	// are folded into the running sums; 64 rows of K and V at head dim 128
	// in float32 are 64 KiB, which stays in a core's L2 cache.
	keyRows int
	// workers is the number of goroutines; 0 is GOMAXPROCS.
	workers int
}

// defaultTiling is the split used when the suite chooses no tunables.
var defaultTiling = tiling{queryRows: 32, keyRows: 64, workers: 0}

// tiles is t with the default tile sizes where t leaves them unset.
func (t tiling) tiles() tiling {
	if t.queryRows <= 0 || t.keyRows <= 0 {
		t.queryRows, t.keyRows = defaultTiling.queryRows, defaultTiling.keyRows
	}
	return t
}

// goroutines is t.workers, or GOMAXPROCS when unset.
func (t tiling) goroutines() int {
	if t.workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return t.workers
}

// problem is one forward pass in float32: the inputs, the output to fill
// and the shape that lays them out ([batch, heads, seq, head_dim]).
type problem struct {
	shape   sdk.Shape
	q, k, v []float32
	out     []float32
	// lse, when not nil, receives each query row's log-sum-exp
	// [batch, heads, seq_q], m + log(l), for the backward pass that
	// follows in mode fwd+bwd.
	lse    []float32
	tiling tiling
}

// attention computes p.out with the problem's tiling; a zero tiling is
// the default one.
func attention(p problem) { attentionWith(p, p.tiling.goroutines()) }

// attentionWith computes p.out with the given number of goroutines. The
// unit of work is one query tile of one (batch, head) pair, so all cores
// are busy both when there are many heads and when a single head has many
// query rows. Workers take the next tile from a shared counter: causal tiles
// differ in cost, and a shared counter balances that without planning.
func attentionWith(p problem, workers int) {
	p.tiling = p.tiling.tiles()
	tiles := ceilDiv(p.shape.SeqQ, p.tiling.queryRows)
	items := p.shape.Batch * p.shape.Heads * tiles
	workers = max(1, min(workers, items))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			w := newTileWorker(p)
			for {
				item := int(next.Add(1) - 1)
				if item >= items {
					return
				}
				head, tile := item/tiles, item%tiles
				// Later query tiles see more keys when causal: start them
				// first so that the cheap ones fill the gaps at the end.
				w.attendTile(head, tiles-1-tile)
			}
		})
	}
	wg.Wait()
}

// tileWorker holds one goroutine's scratch space, allocated once per
// forward pass, never per row.
type tileWorker struct {
	p      problem
	scale  float32
	scores []float32 // one query row's scores against one key block
	rowMax []float32 // m of each row of the tile
	rowSum []float32 // l of each row of the tile
}

func newTileWorker(p problem) *tileWorker {
	return &tileWorker{
		p:      p,
		scale:  float32(p.shape.Scale()),
		scores: make([]float32, p.tiling.keyRows),
		rowMax: make([]float32, p.tiling.queryRows),
		rowSum: make([]float32, p.tiling.queryRows),
	}
}

// attendTile computes the output rows of one query tile of one head; head
// counts (batch, head) pairs, batch-major.
func (w *tileWorker) attendTile(head, tile int) {
	s := w.p.shape
	d := s.HeadDim
	batch, queryHead := head/s.Heads, head%s.Heads
	kvHead := batch*s.KVHeads + queryHead/(s.Heads/s.KVHeads) // GQA: a group of query heads shares one K/V head
	q := w.p.q[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
	out := w.p.out[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
	k := w.p.k[kvHead*s.SeqK*d : (kvHead+1)*s.SeqK*d]
	v := w.p.v[kvHead*s.SeqK*d : (kvHead+1)*s.SeqK*d]

	rows := w.p.tiling.queryRows
	first, end := tile*rows, min((tile+1)*rows, s.SeqQ)
	w.startRows(out[first*d : end*d])
	keyEnd := s.SeqK
	if s.Causal {
		keyEnd = min(s.SeqK, end) // the tile's last row, end−1, sees keys up to end−1
	}
	for block := 0; block < keyEnd; block += w.p.tiling.keyRows {
		blockEnd := min(block+w.p.tiling.keyRows, keyEnd)
		for row := first; row < end; row++ {
			visible := blockEnd
			if s.Causal {
				visible = min(blockEnd, row+1) // top-left causal: row sees keys j <= row
			}
			if visible <= block {
				continue
			}
			w.attendBlock(row-first, q[row*d:(row+1)*d], k[block*d:visible*d], v[block*d:visible*d], out[row*d:(row+1)*d])
		}
	}
	var lse []float32
	if w.p.lse != nil {
		lse = w.p.lse[head*s.SeqQ+first : head*s.SeqQ+end]
	}
	w.finishRows(out[first*d:end*d], lse)
}

// startRows sets the running quantities of a tile to "no keys seen".
func (w *tileWorker) startRows(out []float32) {
	clear(out)
	for i := range w.rowMax {
		w.rowMax[i] = float32(math.Inf(-1))
		w.rowSum[i] = 0
	}
}

// finishRows divides each output row by its softmax denominator and, when
// lse is not nil, writes each row's log-sum-exp m + log(l) into it.
func (w *tileWorker) finishRows(out, lse []float32) {
	d := w.p.shape.HeadDim
	for i := range len(out) / d {
		scaleRow(out[i*d:(i+1)*d], 1/w.rowSum[i])
		if lse != nil {
			lse[i] = w.rowMax[i] + float32(math.Log(float64(w.rowSum[i])))
		}
	}
}

// attendBlock folds one block of keys into the running m, l and o of one
// query row (the online softmax step).
func (w *tileWorker) attendBlock(row int, q, k, v, o []float32) {
	d := len(q)
	scores := w.scores[:len(k)/d]
	oldMax := w.rowMax[row]
	newMax := oldMax
	for j := range scores {
		score := dot(q, k[j*d:(j+1)*d]) * w.scale
		scores[j] = score
		newMax = max(newMax, score)
	}
	var blockSum float32
	for j, score := range scores {
		p := exp32(score - newMax)
		scores[j] = p
		blockSum += p
	}
	correction := exp32(oldMax - newMax) // 0 for the first block: oldMax is −Inf
	w.rowSum[row] = w.rowSum[row]*correction + blockSum
	w.rowMax[row] = newMax
	if correction != 1 {
		scaleRow(o, correction)
	}
	addWeightedRows(o, scores, v)
}

// dot is the inner product of two equal-length vectors. Four partial sums
// keep four independent multiply-add chains in flight.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// addWeightedRows adds Σ_j weights[j]·v_j to o, where v_j is row j of v
// (len(o) columns). It walks o in chunks of eight columns and keeps each
// chunk in registers across all rows of v: adding one row at a time would
// load and store all of o once per row.
func addWeightedRows(o, weights, v []float32) {
	d := len(o)
	v = v[:len(weights)*d]
	col := 0
	for ; col+8 <= d; col += 8 {
		out := (*[8]float32)(o[col : col+8])
		// Eight scalars, not an array: the compiler keeps scalars in
		// registers but an array in memory.
		a0, a1, a2, a3, a4, a5, a6, a7 := out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]
		for j, w := range weights {
			row := (*[8]float32)(v[j*d+col : j*d+col+8])
			a0 += w * row[0]
			a1 += w * row[1]
			a2 += w * row[2]
			a3 += w * row[3]
			a4 += w * row[4]
			a5 += w * row[5]
			a6 += w * row[6]
			a7 += w * row[7]
		}
		*out = [8]float32{a0, a1, a2, a3, a4, a5, a6, a7}
	}
	for ; col < d; col++ {
		acc := o[col]
		for j, w := range weights {
			acc += w * v[j*d+col]
		}
		o[col] = acc
	}
}

// scaleRow multiplies every element of o by c.
func scaleRow(o []float32, c float32) {
	for i := range o {
		o[i] *= c
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// exp32 is e^x in float32 for the x ≤ 0 that the softmax needs, within
// 2 ulp of the exact value. It is Cephes' expf: x = n·ln2 + r with
// |r| ≤ ln2/2, a degree-6 polynomial for e^r, and 2^n put straight into
// the exponent bits. math.Exp in float64 costs about as much as the rest
// of a score's work, and S² exponentials are computed per head.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2Hi = 0.693359375 // ln2 split in two so that n·ln2Hi is exact
		ln2Lo = -2.12194440e-4
	)
	if x != x {
		return x
	}
	if x < -87.33654 { // below the smallest normal float32; also catches −Inf
		return 0
	}
	if x > 88.72283 {
		return float32(math.Inf(1))
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2Hi - n*ln2Lo
	poly := float32(1.9875691500e-4)
	poly = poly*r + 1.3981999507e-3
	poly = poly*r + 8.3334519073e-3
	poly = poly*r + 4.1665795894e-2
	poly = poly*r + 1.6666665459e-1
	poly = poly*r + 5.0000001201e-1
	er := poly*r*r + r + 1
	return er * math.Float32frombits(uint32(int32(n)+127)<<23)
}
