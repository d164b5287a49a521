package reference

import (
	"math"
	"runtime"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Forward is the exact forward pass of every query row, in float64: what
// the backward modes start from. O is [B, H, Sq, D] and LSE [B, H, Sq],
// LSE being log Σ_j exp(scale·q·k_j) over the keys each row sees.
type Forward struct {
	O, LSE []float64
}

// ComputeForward is the forward pass of every row of t (Compute over all
// rows), with each row's log-sum-exp: O(B·H·Sq·Sk·D), spread over every
// CPU. It knows top-left causal masking alone, as the backward modes do
// (masks beyond it are refused there when a suite is read). The backward modes need all of it: every row's O and LSE are
// inputs of a backward call, and every query row contributes to each
// key's dK and dV.
func ComputeForward(t *inputs.Tensors) Forward {
	s := t.Shape
	d := s.HeadDim
	f := Forward{O: make([]float64, s.Batch*s.Heads*s.SeqQ*d), LSE: make([]float64, s.Batch*s.Heads*s.SeqQ)}
	blocks := (s.SeqQ + forwardBlock - 1) / forwardBlock
	Parallel(s.Batch*s.Heads*blocks, func() func(int) {
		w := newWorker(t)
		q := make([]float64, forwardBlock*d)
		scores := make([]float64, forwardBlock*s.SeqK)
		return func(task int) {
			head, block := task/blocks, task%blocks
			batch, h := head/s.Heads, head%s.Heads
			w.loadKV(batch*s.KVHeads + h/(s.Heads/s.KVHeads))
			first := block * forwardBlock
			rows := min(forwardBlock, s.SeqQ-first)
			flat := head*s.SeqQ + first
			size := s.DType.Size()
			inputs.DecodeInto(q[:rows*d], s.DType, t.Q[flat*d*size:])
			attendBlock(w, q[:rows*d], scores, first, rows, f.O[flat*d:(flat+rows)*d], f.LSE[flat:flat+rows])
		}
	})
	return f
}

// Gradients are what the reference backward reads: the case's Q, K, V and
// dO (T; T.DO holds dO), and the O and LSE the gradients are taken at. In
// mode bwd these are the O and LSE the backends got (rounded to the dtype
// and to fp32), so the reference computes exactly what a backend is asked
// to; in fwd+bwd they are the exact forward (ComputeForward), since each
// backend computes its own.
type Gradients struct {
	T   *inputs.Tensors
	O   []float64 // [B, H, Sq, D]
	LSE []float64 // [B, H, Sq]
	// delta[row] is dO·O of each query row: the softmax backward's
	// row term, FlashAttention's D.
	delta []float64
}

// NewGradients decodes what the backward reference needs once. o and lse
// are [B, H, Sq, D] and [B, H, Sq].
func NewGradients(t *inputs.Tensors, o, lse []float64) *Gradients {
	s := t.Shape
	d := s.HeadDim
	g := &Gradients{T: t, O: o, LSE: lse, delta: make([]float64, s.Batch*s.Heads*s.SeqQ)}
	doRow := make([]float64, d)
	size := s.DType.Size()
	for row := range g.delta {
		inputs.DecodeInto(doRow, s.DType, t.DO[row*d*size:])
		g.delta[row] = dot(doRow, o[row*d:(row+1)*d])
	}
	return g
}

// KVRowIndex names one key row: row Row of key/value head Head of batch
// entry Batch, a row of dK and dV.
type KVRowIndex struct {
	Batch, Head, Row int
}

// Flat is the key row's index among all B·Hkv·Sk key rows, in layout
// order.
func (r KVRowIndex) Flat(s sdk.Shape) int {
	return (r.Batch*s.KVHeads+r.Head)*s.SeqK + r.Row
}

// KVRows are the key rows whose dK and dV a check compares: every one
// when the case is checked in full (Sampled), else a sample drawn from
// seed the way Rows draws query rows, with the same edges: every key
// head's first and last rows and its last block, which is where key tiles
// go wrong.
func KVRows(s sdk.Shape, settings op.CheckSettings, seed uint64) []KVRowIndex {
	rows := Rows(keyShape(s), settings, seed)
	out := make([]KVRowIndex, len(rows))
	for i, r := range rows {
		out[i] = KVRowIndex(r)
	}
	return out
}

// KVSampled reports whether KVRows checks a sample of the key rows of s
// rather than every one. It can differ from Sampled: a case of few query
// rows and many keys samples its key rows alone.
func KVSampled(s sdk.Shape, settings op.CheckSettings) bool {
	return Sampled(keyShape(s), settings)
}

// keyShape is the shape whose query rows are the key rows of s: Hkv heads
// of Sk rows, and the same pairs count, so the same full-check criterion.
func keyShape(s sdk.Shape) sdk.Shape {
	return sdk.Shape{Batch: s.Batch, Heads: s.KVHeads, KVHeads: s.KVHeads, SeqQ: s.SeqK, SeqK: s.SeqQ * (s.Heads / s.KVHeads), HeadDim: s.HeadDim, DType: s.DType}
}

// DQ is dQ of each query row in rows, in float64:
// dQ_i = scale · Σ_j P_ij (dO_i·V_j − D_i) K_j over the keys row i sees,
// with P_ij = exp(scale·q_i·k_j − LSE_i). O(Sk·D) per row.
func (g *Gradients) DQ(rows []RowIndex) [][]float64 {
	s := g.T.Shape
	out := make([][]float64, len(rows))
	Parallel(len(rows), func() func(int) {
		w := newWorker(g.T)
		doRow := make([]float64, s.HeadDim)
		return func(i int) {
			r := rows[i]
			d := s.HeadDim
			w.loadKV(r.Batch*s.KVHeads + r.Head/(s.Heads/s.KVHeads))
			size := s.DType.Size()
			flat := r.Flat(s)
			inputs.DecodeInto(w.q, s.DType, g.T.Q[flat*d*size:])
			inputs.DecodeInto(doRow, s.DType, g.T.DO[flat*d*size:])
			dq := make([]float64, d)
			scale, lse, delta := s.Scale(), g.LSE[flat], g.delta[flat]
			for j := range visibleKeys(s, r.Row) {
				k, v := w.k[j*d:(j+1)*d], w.v[j*d:(j+1)*d]
				p := math.Exp(scale*dot(w.q, k) - lse)
				ds := p * (dot(doRow, v) - delta)
				for x, kx := range k {
					dq[x] += ds * kx
				}
			}
			for x := range dq {
				dq[x] *= scale
			}
			out[i] = dq
		}
	})
	return out
}

// DKV is dK and dV of each key row in rows, in float64, summed over the
// query heads that share the key/value head:
// dV_j = Σ_h Σ_i P_ij dO_i and dK_j = scale · Σ_h Σ_i P_ij (dO_i·V_j − D_i) Q_i
// over the query rows i that see key j. O(H/Hkv · Sq · D) per row.
func (g *Gradients) DKV(rows []KVRowIndex) (dk, dv [][]float64) {
	s := g.T.Shape
	dk, dv = make([][]float64, len(rows)), make([][]float64, len(rows))
	Parallel(len(rows), func() func(int) {
		w := newGroupWorker(g)
		return func(i int) {
			r := rows[i]
			d := s.HeadDim
			w.load(r.Batch, r.Head)
			size := s.DType.Size()
			k, v := make([]float64, d), make([]float64, d)
			flat := r.Flat(s)
			inputs.DecodeInto(k, s.DType, g.T.K[flat*d*size:])
			inputs.DecodeInto(v, s.DType, g.T.V[flat*d*size:])
			dkRow, dvRow := make([]float64, d), make([]float64, d)
			scale := s.Scale()
			group := s.Heads / s.KVHeads
			for h := range group {
				head := (r.Batch*s.Heads + r.Head*group + h) * s.SeqQ
				for qi := firstQueryRow(s, r.Row); qi < s.SeqQ; qi++ {
					at := h*s.SeqQ + qi
					q, do := w.q[at*d:(at+1)*d], w.do[at*d:(at+1)*d]
					p := math.Exp(scale*dot(q, k) - g.LSE[head+qi])
					ds := p * (dot(do, v) - g.delta[head+qi])
					for x := range d {
						dvRow[x] += p * do[x]
						dkRow[x] += ds * q[x]
					}
				}
			}
			for x := range dkRow {
				dkRow[x] *= scale
			}
			dk[i], dv[i] = dkRow, dvRow
		}
	})
	return dk, dv
}

// firstQueryRow is the first query row that sees key row j: 0, or under
// the top-left causal mask row j.
func firstQueryRow(s sdk.Shape, j int) int {
	if s.Causal {
		return j
	}
	return 0
}

// groupWorker holds the decoded Q and dO of the query heads of one
// key/value head.
type groupWorker struct {
	g     *Gradients
	held  int // flat b·Hkv + kvh, or -1
	q, do []float64
}

func newGroupWorker(g *Gradients) *groupWorker {
	s := g.T.Shape
	n := (s.Heads / s.KVHeads) * s.SeqQ * s.HeadDim
	return &groupWorker{g: g, held: -1, q: make([]float64, n), do: make([]float64, n)}
}

func (w *groupWorker) load(batch, kvHead int) {
	s := w.g.T.Shape
	if key := batch*s.KVHeads + kvHead; key != w.held {
		size := s.DType.Size()
		group := s.Heads / s.KVHeads
		start := (batch*s.Heads + kvHead*group) * s.SeqQ * s.HeadDim * size
		n := len(w.q) * size
		inputs.DecodeInto(w.q, s.DType, w.g.T.Q[start:start+n])
		inputs.DecodeInto(w.do, s.DType, w.g.T.DO[start:start+n])
		w.held = key
	}
}

// Parallel runs task(i) for i in [0, n) over every CPU, in contiguous
// runs so that consecutive rows reuse a worker's decoded head. newTask
// makes one worker's task, with its own buffers.
func Parallel(n int, newTask func() func(int)) {
	parallelOn(runtime.GOMAXPROCS(0), n, newTask)
}

// parallelOn is Parallel on at most workers goroutines.
func parallelOn(workers, n int, newTask func() func(int)) {
	workers = max(workers, 1)
	run := max((n+4*workers-1)/(4*workers), 1)
	next := make(chan int, (n+run-1)/run)
	for start := 0; start < n; start += run {
		next <- start
	}
	close(next)
	var wg sync.WaitGroup
	for range min(workers, len(next)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := newTask()
			for start := range next {
				for i := start; i < min(start+run, n); i++ {
					task(i)
				}
			}
		}()
	}
	wg.Wait()
}
