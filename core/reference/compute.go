package reference

import (
	"math"
	"runtime"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// Compute returns the attention output of each row in rows, in float64:
// out[i] has HeadDim elements and belongs to rows[i].
//
// It follows the contract of sdk.Shape: scores q·k scaled by 1/sqrt(D),
// query head h reads key/value head h/(H/Hkv), and a causal row i sees keys
// j <= i (top-left aligned). A case with a mask beyond that (t.Mask: the
// bottom-right alignment, a window, soft-capping) attends row by row over
// the keys the mask gives it (mask.Mask.Keys), through AttendRow, as the
// serving ops do; a row that sees no key is zeros. The softmax subtracts
// the row maximum before exp, so no input can overflow it. The inputs are
// the stored, rounded values; everything after is float64.
//
// Rows are shared among goroutines in contiguous runs. A run decodes the K
// and V of one key/value head once and reuses them while consecutive rows
// read that head, so checking every row of a case costs little more than
// the arithmetic.
func Compute(t *inputs.Tensors, rows []RowIndex) [][]float64 {
	return computeOn(runtime.GOMAXPROCS(0), t, rows)
}

func computeOn(workers int, t *inputs.Tensors, rows []RowIndex) [][]float64 {
	out := make([][]float64, len(rows))
	parallelOn(workers, len(rows), func() func(int) {
		w := newWorker(t)
		return func(i int) { out[i] = w.row(rows[i]) }
	})
	return out
}

// Warm computes the rows ComputeKept will be asked for and keeps them with
// t, on at most workers goroutines: the host computes the reference of a
// row's fresh inputs while the row's plugin takes its samples, before the
// output exists. The rows must be ones the check does not draw from a
// seed of its own (reference.Sampled is false), or the warmth is wasted.
func Warm(t *inputs.Tensors, rows []RowIndex, workers int) {
	computeKeptOn(workers, t, rows)
}

// ComputeKept is Compute for the checks of a case: each row it computes is
// kept with t (inputs.Tensors.KeepReference) and returned again, bit for
// bit, to later calls, since every row of a case, checked run and timed
// output alike, is held to the one reference. The returned rows are
// shared: read them, never write them.
func ComputeKept(t *inputs.Tensors, rows []RowIndex) [][]float64 {
	return computeKeptOn(runtime.GOMAXPROCS(0), t, rows)
}

func computeKeptOn(workers int, t *inputs.Tensors, rows []RowIndex) [][]float64 {
	out := make([][]float64, len(rows))
	var missing []RowIndex
	var at []int
	for i, r := range rows {
		if kept, ok := t.Reference(r.Flat(t.Shape)); ok {
			out[i] = kept
		} else {
			missing, at = append(missing, r), append(at, i)
		}
	}
	for j, row := range computeOn(workers, t, missing) {
		out[at[j]] = row
		t.KeepReference(missing[j].Flat(t.Shape), row)
	}
	return out
}

// worker computes rows, holding the decoded K and V of the last key/value
// head it read.
type worker struct {
	t      *inputs.Tensors
	s      sdk.Shape
	kvHead int // flat index b·Hkv + kvh of the decoded head, or -1
	k, v   []float64
	q      []float64
	scores []float64
}

func newWorker(t *inputs.Tensors) *worker {
	s := t.Shape
	return &worker{
		t: t, s: s, kvHead: -1,
		k:      make([]float64, s.SeqK*s.HeadDim),
		v:      make([]float64, s.SeqK*s.HeadDim),
		q:      make([]float64, s.HeadDim),
		scores: make([]float64, s.SeqK),
	}
}

func (w *worker) row(r RowIndex) []float64 {
	s, d := w.s, w.s.HeadDim
	size := s.DType.Size()
	qStart := r.Flat(s) * d * size
	inputs.DecodeInto(w.q, s.DType, w.t.Q[qStart:qStart+d*size])
	kvHead := r.Batch*s.KVHeads + r.Head/(s.Heads/s.KVHeads)
	if m := w.t.Masking(); !m.Prefix(s.SeqQ, s.SeqK) {
		lo, hi := m.Keys(r.Row, s.SeqQ, s.SeqK)
		at := func(j int) int { return (kvHead*s.SeqK + j) * d * size }
		return AttendRow(s.DType, w.q, w.t.K, w.t.V, lo, hi, at, s.Scale(), m.Score)
	}
	w.loadKV(kvHead)
	out, lse := make([]float64, d), []float64{0}
	attendBlock(w, w.q, w.scores, r.Row, 1, out, lse)
	return out
}

// loadKV decodes the K and V of one key/value head, unless already held.
func (w *worker) loadKV(head int) {
	if head == w.kvHead {
		return
	}
	n := w.s.SeqK * w.s.HeadDim
	size := w.s.DType.Size()
	start := head * n * size
	inputs.DecodeInto(w.k, w.s.DType, w.t.K[start:start+n*size])
	inputs.DecodeInto(w.v, w.s.DType, w.t.V[start:start+n*size])
	w.kvHead = head
}

// visibleKeys is how many keys query row i sees: all of them, or under the
// top-left causal mask keys 0..i.
func visibleKeys(s sdk.Shape, i int) int {
	if s.Causal {
		return min(i+1, s.SeqK)
	}
	return s.SeqK
}

// dot is Σ a_i·b_i, in four running sums so that consecutive additions do
// not wait on each other (the reference forward of the backward modes
// spends its time here).
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
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

// axpy adds a·x to y.
func axpy(y []float64, a float64, x []float64) {
	x = x[:len(y)]
	for i, xi := range x {
		y[i] += a * xi
	}
}

// forwardBlock is how many query rows ComputeForward takes at once: each
// key and value row is read once per block rather than once per row.
const forwardBlock = 16

// attendBlock is softmax(scale·q·Kᵀ)·V for query rows first..first+rows
// of one head, whose K and V w holds, over the keys each row sees: o and
// lse receive each row's output and log-sum-exp. The softmax subtracts
// the row maximum before exp. Rows are visited key by key, so that a key
// row is read from memory once for the whole block; the sampled rows of
// Compute are blocks of one.
func attendBlock(w *worker, q, scores []float64, first, rows int, o, lse []float64) {
	s := w.s
	d, sk := s.HeadDim, s.SeqK
	scale := s.Scale()
	visible := func(r int) int { return visibleKeys(s, first+r) }
	for j := range visibleKeys(s, first+rows-1) {
		k := w.k[j*d : (j+1)*d]
		r := 0
		for ; r+4 <= rows && j < visible(r); r += 4 {
			// Rows r..r+3 all see key j when row r does (visible grows
			// with the row).
			a, b, c, e := dot4(q[r*d:(r+4)*d], k)
			scores[r*sk+j], scores[(r+1)*sk+j], scores[(r+2)*sk+j], scores[(r+3)*sk+j] = scale*a, scale*b, scale*c, scale*e
		}
		for ; r < rows; r++ {
			if j < visible(r) {
				scores[r*sk+j] = scale * dot(q[r*d:(r+1)*d], k)
			}
		}
	}
	for r := range rows {
		row := scores[r*sk : r*sk+visible(r)]
		maxScore := math.Inf(-1)
		for _, x := range row {
			maxScore = max(maxScore, x)
		}
		var sum float64
		for j, x := range row {
			row[j] = math.Exp(x - maxScore)
			sum += row[j]
		}
		for j := range row {
			row[j] /= sum
		}
		lse[r] = maxScore + math.Log(sum)
	}
	clear(o)
	for j := range visibleKeys(s, first+rows-1) {
		v := w.v[j*d : (j+1)*d]
		for r := range rows {
			if j < visible(r) {
				axpy(o[r*d:(r+1)*d], scores[r*sk+j], v)
			}
		}
	}
}

// dot4 is the dot products of k with the four consecutive rows of q
// (len(k) each): k is read once for the four.
func dot4(q, k []float64) (float64, float64, float64, float64) {
	d := len(k)
	q0, q1, q2, q3 := q[:d], q[d:2*d], q[2*d:3*d], q[3*d:4*d]
	var s0, s1, s2, s3 float64
	for i, kx := range k {
		s0 += q0[i] * kx
		s1 += q1[i] * kx
		s2 += q2[i] * kx
		s3 += q3[i] * kx
	}
	return s0, s1, s2, s3
}
