package check

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// The whole-output bound. Softmax weights are non-negative and sum to one,
// so every output element o[b,h,i,d] is a convex combination of the values
// V[b,kvh,j,d] over the keys j that row i sees (mask.Mask.Keys), and lies
// between their minimum and their maximum; a row that sees no key is
// zeros. Checking that costs O(output + B·H·Sk·D), so
// unlike the comparison with the reference it covers every element, not a
// sample: a backend that computes only some rows, or only behaves when it
// is checked, leaves values outside the range somewhere. An element may
// stray by atol + rtol·|bound|, the case's tolerance, for rounding.

// outOfRange is what the bound check found.
type outOfRange struct {
	count int
	first boundElement // the first offending element in layout order
}

type boundElement struct {
	batch, head, row, col int
	got, lo, hi           float64
}

func (e boundElement) describe(s sdk.Shape) string {
	return fmt.Sprintf("at [b%d h%d q%d d%d]: got %.6g, V ranges over [%.6g, %.6g]",
		e.batch, e.head, e.row, e.col, e.got, e.lo, e.hi)
}

// boundViolations counts the finite output elements outside the range of V
// over their visible keys. NaN, Inf and poisoned elements are counted by
// the census, not here. Heads are checked in parallel.
func boundViolations(t *inputs.Tensors, output []byte, tol op.Tolerance) outOfRange {
	s := t.Shape
	heads := s.Batch * s.Heads
	found := make([]outOfRange, heads)
	next := make(chan int, heads)
	for h := range heads {
		next <- h
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), heads) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := newBounder(t, output, tol)
			for h := range next {
				found[h] = b.head(h/s.Heads, h%s.Heads)
			}
		}()
	}
	wg.Wait()
	var total outOfRange
	for _, f := range found {
		if f.count > 0 && total.count == 0 {
			total.first = f.first
		}
		total.count += f.count
	}
	return total
}

// bounder checks one head at a time, holding buffers for one row of V and
// one of the output, and the range of V over the keys the current row
// sees.
type bounder struct {
	t          *inputs.Tensors
	output     []byte
	tol        op.Tolerance
	keys       slidingRange
	vRow, oRow []float64
}

func newBounder(t *inputs.Tensors, output []byte, tol op.Tolerance) *bounder {
	d := t.Shape.HeadDim
	return &bounder{t: t, output: output, tol: tol, keys: newSlidingRange(d),
		vRow: make([]float64, d), oRow: make([]float64, d)}
}

// head checks the rows of query head h of batch entry b. Rows are visited
// in order; the keys a row sees (mask.Mask.Keys) never start or end
// before the previous row's, so the range of V is kept over a window that
// slides forward, each key row decoded once: under top-left causal it
// grows one key per row. A row that sees no key must be zeros.
func (b *bounder) head(batch, h int) outOfRange {
	s := b.t.Shape
	m := b.t.Masking()
	d, size := s.HeadDim, s.DType.Size()
	kvBase := (batch*s.KVHeads + h/(s.Heads/s.KVHeads)) * s.SeqK * d
	oBase := (batch*s.Heads + h) * s.SeqQ * d
	b.keys.reset()
	var found outOfRange
	next := 0 // the first key row not yet in the window
	for i := range s.SeqQ {
		first, last := m.Keys(i, s.SeqQ, s.SeqK)
		for next = max(next, first); next <= last; next++ {
			start := (kvBase + next*d) * size
			inputs.DecodeInto(b.vRow, s.DType, b.t.V[start:start+d*size])
			b.keys.push(next, b.vRow)
		}
		b.keys.dropBefore(first)
		start := (oBase + i*d) * size
		inputs.DecodeInto(b.oRow, s.DType, b.output[start:start+d*size])
		for x, o := range b.oRow {
			if math.IsNaN(o) || math.IsInf(o, 0) {
				continue
			}
			lo, hi := b.keys.bounds(x)
			slack := b.tol.Atol + b.tol.Rtol*max(math.Abs(lo), math.Abs(hi))
			if o >= lo-slack && o <= hi+slack {
				continue
			}
			if found.count == 0 {
				found.first = boundElement{batch: batch, head: h, row: i, col: x, got: o, lo: lo, hi: hi}
			}
			found.count++
		}
	}
	return found
}

// slidingRange is the range of each column of V over a window of key rows
// whose both ends only move forward: per column, the rows that may still
// be its maximum (values falling from the front) and those that may still
// be its minimum (values rising), so that pushing a row and dropping rows
// cost O(1) each, amortised.
type slidingRange struct {
	maxima, minima [][]keyValue
}

type keyValue struct {
	key   int
	value float64
}

func newSlidingRange(columns int) slidingRange {
	return slidingRange{maxima: make([][]keyValue, columns), minima: make([][]keyValue, columns)}
}

func (r *slidingRange) reset() {
	for x := range r.maxima {
		r.maxima[x], r.minima[x] = r.maxima[x][:0], r.minima[x][:0]
	}
}

// push adds key row key, of values row, at the window's end.
func (r *slidingRange) push(key int, row []float64) {
	for x, v := range row {
		q := r.maxima[x]
		for len(q) > 0 && q[len(q)-1].value <= v {
			q = q[:len(q)-1]
		}
		r.maxima[x] = append(q, keyValue{key, v})
		q = r.minima[x]
		for len(q) > 0 && q[len(q)-1].value >= v {
			q = q[:len(q)-1]
		}
		r.minima[x] = append(q, keyValue{key, v})
	}
}

// dropBefore removes the key rows before first from the window.
func (r *slidingRange) dropBefore(first int) {
	for x := range r.maxima {
		for len(r.maxima[x]) > 0 && r.maxima[x][0].key < first {
			r.maxima[x] = r.maxima[x][1:]
		}
		for len(r.minima[x]) > 0 && r.minima[x][0].key < first {
			r.minima[x] = r.minima[x][1:]
		}
	}
}

// bounds is the range of column x over the window: [0, 0] when it holds
// no key row, since a row that sees no key is zeros.
func (r *slidingRange) bounds(x int) (lo, hi float64) {
	if len(r.maxima[x]) == 0 {
		return 0, 0
	}
	return r.minima[x][0].value, r.maxima[x][0].value
}
