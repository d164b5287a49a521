package cpureference

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/flashcore/bench/sdk"
)

// varlenOp is the op name of attention over packed sequences of different
// lengths (flashcore list --ops).
const varlenOp = "varlen"

// varlenInputs are varlen's inputs, in the op's order.
var varlenInputs = []string{"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"}

// varlenProblem is one varlen case in float32: q [totalQ, heads, dim], k
// and v [totalK, kvHeads, dim], and each sequence's offsets.
type varlenProblem struct {
	heads, kvHeads, dim int
	causal              bool
	left, right         int     // the window's bounds; -1: none
	softcap             float32 // 0: none
	q, k, v             []float32
	cuQ, cuK            []int32
	out                 []float32
}

// varlenAttention computes every output row, the (sequence, head) pairs
// shared among the cores. Query i of a sequence of lq queries over lk
// keys sits at key position lk-lq+i (the causal mask's bottom-right
// alignment).
func varlenAttention(p varlenProblem) {
	batch := len(p.cuQ) - 1
	jobs := make(chan int, batch*p.heads)
	for j := range batch * p.heads {
		jobs <- j
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(batch*p.heads, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var scores []float32
			acc := make([]float64, p.dim)
			for job := range jobs {
				b, h := job/p.heads, job%p.heads
				lq := int(p.cuQ[b+1] - p.cuQ[b])
				for i := range lq {
					scores = p.row(b, i, h, scores[:0], acc)
				}
			}
		}()
	}
	wg.Wait()
}

// row computes query i of sequence b for head h, reusing scores and acc.
func (p varlenProblem) row(b, i, h int, scores []float32, acc []float64) []float32 {
	lq, lk := int(p.cuQ[b+1]-p.cuQ[b]), int(p.cuK[b+1]-p.cuK[b])
	pos := lk - lq + i
	first, last := 0, lk-1
	if p.causal {
		last = min(last, pos)
	}
	if p.right >= 0 {
		last = min(last, pos+p.right)
	}
	if p.left >= 0 {
		first = max(first, pos-p.left)
	}
	kvh := h / (p.heads / p.kvHeads)
	qRow := p.q[((int(p.cuQ[b])+i)*p.heads+h)*p.dim:][:p.dim]
	out := p.out[((int(p.cuQ[b])+i)*p.heads+h)*p.dim:][:p.dim]
	keyAt := func(j int) int { return ((int(p.cuK[b])+j)*p.kvHeads + kvh) * p.dim }
	return attendRow(qRow, p.k, p.v, first, last, keyAt, p.softcap, scores, acc, out)
}

// loadVarlen reads varlen's named inputs, hashes their bytes in order,
// checks the offsets against the packed tensors, and allocates o.
func loadVarlen(req sdk.PrepareRequest) (*preparedCase, string, error) {
	raw, hash, err := readNamedInputs(req, varlenOp, varlenInputs)
	if err != nil {
		return nil, "", err
	}
	q, k := req.Inputs[0], req.Inputs[1]
	if len(q.Dims) != 3 || len(k.Dims) != 3 {
		return nil, "", fmt.Errorf("varlen wants q[total_q, H, D] and k[total_k, KVH, D], got q%v and k%v", q.Dims, k.Dims)
	}
	p := varlenProblem{heads: q.Dims[1], dim: q.Dims[2], kvHeads: k.Dims[1],
		causal: req.Params["causal"] == "true", left: -1, right: -1}
	if w, err := strconv.Atoi(req.Params["window_left"]); err == nil {
		p.left = w
	}
	if w, err := strconv.Atoi(req.Params["window_right"]); err == nil {
		p.right = w
	}
	if c, err := strconv.ParseFloat(req.Params["softcap"], 64); err == nil {
		p.softcap = float32(c)
	}
	for _, t := range []struct {
		name string
		dst  *[]float32
	}{{"q", &p.q}, {"k", &p.k}, {"v", &p.v}} {
		if *t.dst, err = decode(q.DType, raw[t.name]); err != nil {
			return nil, "", fmt.Errorf("%s: %w", t.name, err)
		}
	}
	p.cuQ, p.cuK = int32s(raw["cu_seqlens_q"]), int32s(raw["cu_seqlens_k"])
	if err := checkOffsets("cu_seqlens_q", p.cuQ, q.Dims[0]); err != nil {
		return nil, "", err
	}
	if err := checkOffsets("cu_seqlens_k", p.cuK, k.Dims[0]); err != nil {
		return nil, "", err
	}
	p.out = make([]float32, len(p.q))
	return &preparedCase{
		run:     func() { varlenAttention(p) },
		outputs: []*output{newOutput(p.out, q.DType, req.Outputs[0].Path)},
	}, hash, nil
}

// checkOffsets refuses offsets that do not start at 0, fall, or end
// anywhere but at the packed tensor's rows.
func checkOffsets(name string, cu []int32, rows int) error {
	if len(cu) < 2 || cu[0] != 0 || int(cu[len(cu)-1]) != rows {
		return fmt.Errorf("%s must run from 0 to %d, got %v", name, rows, cu)
	}
	for b := 1; b < len(cu); b++ {
		if cu[b] < cu[b-1] {
			return fmt.Errorf("%s falls at entry %d (%d after %d)", name, b, cu[b], cu[b-1])
		}
	}
	return nil
}
