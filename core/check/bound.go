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
// V[b,kvh,j,d] over the keys j that row i sees, and lies between their
// minimum and their maximum. Checking that costs O(output + B·H·Sk·D), so
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
// the running range.
type bounder struct {
	t          *inputs.Tensors
	output     []byte
	tol        op.Tolerance
	lo, hi     []float64 // range of V over the keys seen so far
	vRow, oRow []float64
}

func newBounder(t *inputs.Tensors, output []byte, tol op.Tolerance) *bounder {
	d := t.Shape.HeadDim
	return &bounder{t: t, output: output, tol: tol,
		lo: make([]float64, d), hi: make([]float64, d), vRow: make([]float64, d), oRow: make([]float64, d)}
}

// head checks the rows of query head h of batch entry b. Rows are visited
// in order, so under the causal mask the range grows one key per row.
func (b *bounder) head(batch, h int) outOfRange {
	s := b.t.Shape
	d, size := s.HeadDim, s.DType.Size()
	kvBase := (batch*s.KVHeads + h/(s.Heads/s.KVHeads)) * s.SeqK * d
	oBase := (batch*s.Heads + h) * s.SeqQ * d
	for x := range d {
		b.lo[x], b.hi[x] = math.Inf(1), math.Inf(-1)
	}
	var found outOfRange
	seen := 0
	for i := range s.SeqQ {
		visible := s.SeqK
		if s.Causal {
			visible = min(i+1, s.SeqK)
		}
		for ; seen < visible; seen++ {
			start := (kvBase + seen*d) * size
			inputs.DecodeInto(b.vRow, s.DType, b.t.V[start:start+d*size])
			for x, v := range b.vRow {
				b.lo[x], b.hi[x] = min(b.lo[x], v), max(b.hi[x], v)
			}
		}
		start := (oBase + i*d) * size
		inputs.DecodeInto(b.oRow, s.DType, b.output[start:start+d*size])
		for x, o := range b.oRow {
			if math.IsNaN(o) || math.IsInf(o, 0) {
				continue
			}
			lo, hi := b.lo[x], b.hi[x]
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
