package reference

import (
	"math"
	"runtime"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// Compute returns the attention output of each row in rows, in float64:
// out[i] has HeadDim elements and belongs to rows[i].
//
// It follows the contract of sdk.Shape: scores q·k scaled by 1/sqrt(D),
// query head h reads key/value head h/(H/Hkv), and a causal row i sees keys
// j <= i (top-left aligned). The softmax subtracts the row maximum before
// exp, so no input can overflow it. The inputs are the stored, rounded
// values; everything after is float64.
//
// Rows are shared among goroutines in contiguous runs. A run decodes the K
// and V of one key/value head once and reuses them while consecutive rows
// read that head, so checking every row of a case costs little more than
// the arithmetic.
func Compute(t *inputs.Tensors, rows []RowIndex) [][]float64 {
	out, _ := computeRows(t, rows)
	return out
}

// computeRows is Compute that also returns each row's log-sum-exp:
// log Σ_j exp(scale·q·k_j) over the keys the row sees.
func computeRows(t *inputs.Tensors, rows []RowIndex) ([][]float64, []float64) {
	out := make([][]float64, len(rows))
	lse := make([]float64, len(rows))
	workers := runtime.GOMAXPROCS(0)
	run := max((len(rows)+4*workers-1)/(4*workers), 1)
	next := make(chan int, (len(rows)+run-1)/run)
	for start := 0; start < len(rows); start += run {
		next <- start
	}
	close(next)
	var wg sync.WaitGroup
	for range min(workers, len(next)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(t)
			for start := range next {
				for i := start; i < min(start+run, len(rows)); i++ {
					out[i], lse[i] = w.row(rows[i])
				}
			}
		}()
	}
	wg.Wait()
	return out, lse
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

func (w *worker) row(r RowIndex) ([]float64, float64) {
	s, d := w.s, w.s.HeadDim
	w.loadKV(r.Batch*s.KVHeads + r.Head/(s.Heads/s.KVHeads))
	size := s.DType.Size()
	qStart := r.Flat(s) * d * size
	inputs.DecodeInto(w.q, s.DType, w.t.Q[qStart:qStart+d*size])
	return attend(w.q, w.k, w.v, w.scores[:visibleKeys(s, r.Row)], s.Scale())
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

// attend is softmax(scale·q·Kᵀ)·V over the first len(scores) keys, and
// the log-sum-exp of the scaled scores.
func attend(q, k, v, scores []float64, scale float64) ([]float64, float64) {
	d := len(q)
	maxScore := math.Inf(-1)
	for j := range scores {
		scores[j] = scale * dot(q, k[j*d:(j+1)*d])
		maxScore = max(maxScore, scores[j])
	}
	out := make([]float64, d)
	var sum float64
	for j, score := range scores {
		p := math.Exp(score - maxScore)
		sum += p
		axpy(out, p, v[j*d:(j+1)*d])
	}
	for x := range out {
		out[x] /= sum
	}
	return out, maxScore + math.Log(sum)
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
