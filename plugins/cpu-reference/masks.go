package cpureference

import (
	"strconv"
	"sync"

	"github.com/flashcore/bench/sdk"
)

// denseMask is what a dense attention case asks beyond causal, read from
// the request's params (absent: the default): where the causal mask and
// the window sit when SeqQ != SeqK (top-left, query row i at key position
// i; or bottom-right, at SeqK-SeqQ+i), the window's bounds (-1: none) and
// the softcap (0: none).
type denseMask struct {
	bottomRight bool
	left, right int
	softcap     float32
}

func denseMaskOf(params map[string]string) denseMask {
	m := denseMask{bottomRight: params["causal_align"] == "bottom-right", left: -1, right: -1}
	if w, err := strconv.Atoi(params["window_left"]); err == nil {
		m.left = w
	}
	if w, err := strconv.Atoi(params["window_right"]); err == nil {
		m.right = w
	}
	if c, err := strconv.ParseFloat(params["softcap"], 64); err == nil {
		m.softcap = float32(c)
	}
	return m
}

// set reports whether the mask asks for anything but the default.
func (m denseMask) set() bool { return m.bottomRight || m.left >= 0 || m.right >= 0 || m.softcap > 0 }

// tiled reports whether the tiled forward (attention.go) computes the
// case: no window, no softcap, and causal (if at all) top-left or where
// the alignment moves nothing (SeqQ = SeqK).
func (m denseMask) tiled(s sdk.Shape) bool {
	return m.left < 0 && m.right < 0 && m.softcap == 0 && (!m.bottomRight || !s.Causal || s.SeqQ == s.SeqK)
}

// keys is the range of keys query row i of the shape sees; empty (last <
// first) when the mask leaves it none.
func (m denseMask) keys(s sdk.Shape, i int) (first, last int) {
	pos := i
	if m.bottomRight {
		pos = s.SeqK - s.SeqQ + i
	}
	first, last = 0, s.SeqK-1
	if s.Causal {
		last = min(last, pos)
	}
	if m.right >= 0 {
		last = min(last, pos+m.right)
	}
	if m.left >= 0 {
		first = max(first, pos-m.left)
	}
	return first, last
}

// maskedAttention computes every output row of p under m, each query row
// over the keys m gives it through attendRow, as decode and varlen do (a
// row that sees no key is zeros). The (batch, head) pairs are shared
// among the cores.
func maskedAttention(p problem, m denseMask) {
	s := p.shape
	heads := s.Batch * s.Heads
	jobs := make(chan int, heads)
	for h := range heads {
		jobs <- h
	}
	close(jobs)
	var wg sync.WaitGroup
	for range max(1, min(p.tiling.goroutines(), heads)) {
		wg.Go(func() {
			var scores []float32
			acc := make([]float64, s.HeadDim)
			for head := range jobs {
				scores = m.attendHead(p, head, scores, acc)
			}
		})
	}
	wg.Wait()
}

// attendHead computes the rows of one (batch, head) pair; head counts
// them batch-major.
func (m denseMask) attendHead(p problem, head int, scores []float32, acc []float64) []float32 {
	s := p.shape
	d := s.HeadDim
	batch, queryHead := head/s.Heads, head%s.Heads
	kvHead := batch*s.KVHeads + queryHead/(s.Heads/s.KVHeads)
	keyAt := func(j int) int { return (kvHead*s.SeqK + j) * d }
	for i := range s.SeqQ {
		first, last := m.keys(s, i)
		row := (head*s.SeqQ + i) * d
		scores = attendRow(p.q[row:row+d], p.k, p.v, first, last, keyAt, m.softcap, scores[:0], acc, p.out[row:row+d])
	}
	return scores
}
