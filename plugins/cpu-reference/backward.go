package cpureference

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/flashcore/bench/sdk"
)

// This file is attention's backward pass on a CPU, in float32 like the
// forward. Given Q, K, V, the forward's output O, the upstream gradient
// dO and each query row's log-sum-exp L (lse), the softmax weights are
// recomputed rather than stored:
//
//	P_ij  = exp(scale·q_i·k_j − L_i)     over the keys row i sees
//	Δ_i   = dO_i·O_i
//	dP_ij = dO_i·v_j
//	dS_ij = P_ij·(dP_ij − Δ_i)
//	dV_j  = Σ_i P_ij·dO_i
//	dK_j  = scale·Σ_i dS_ij·q_i
//	dQ_i  = scale·Σ_j dS_ij·k_j
//
// where, with grouped-query heads, dK and dV of a key/value head sum over
// the query rows of every query head of its group.
//
// The work is split so that every output row has one owner and no two
// goroutines add into the same row: dK and dV are computed per tile of key
// rows of one key/value head (key_block_rows rows, over every query row of
// the group), dQ per tile of query rows of one query head
// (query_tile_rows rows, over the keys in blocks of key_block_rows). Each
// pass recomputes P and dS; doing both passes costs about twice the
// exponentials of one, and buys a split with no atomics and no partial
// sums to reduce. Every row adds its terms in a fixed order (dK and dV:
// query head, then query row; dQ: key row), so the gradients are the same
// bit for bit whatever the tiling and the number of workers.

// backwardProblem is one backward pass in float32: the inputs, the
// gradients to fill, and the shape that lays them out.
type backwardProblem struct {
	shape          sdk.Shape
	q, k, v, o, do []float32
	lse            []float32 // [batch, heads, seq_q]
	dq, dk, dv     []float32
	// delta is scratch for Δ_i = dO_i·O_i of every query row, allocated
	// once at Prepare.
	delta  []float32
	tiling tiling
}

// backward computes p.dq, p.dk and p.dv with the problem's tiling; a zero
// tiling is the default one.
func backward(p backwardProblem) { backwardWith(p, p.tiling.goroutines()) }

// backwardWith computes the gradients with the given number of goroutines.
// The units of work are the key tiles of every key/value head (dK, dV)
// and the query tiles of every query head (dQ), taken from one shared
// counter, key tiles first.
func backwardWith(p backwardProblem, workers int) {
	p.tiling = p.tiling.tiles()
	s := p.shape
	d := s.HeadDim
	for row := range p.delta {
		p.delta[row] = dot(p.do[row*d:(row+1)*d], p.o[row*d:(row+1)*d])
	}
	keyTiles := ceilDiv(s.SeqK, p.tiling.keyRows)
	queryTiles := ceilDiv(s.SeqQ, p.tiling.queryRows)
	keyItems := s.Batch * s.KVHeads * keyTiles
	items := keyItems + s.Batch*s.Heads*queryTiles
	workers = max(1, min(workers, items))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			w := backwardWorker{p: p, scale: float32(s.Scale())}
			for {
				item := int(next.Add(1) - 1)
				switch {
				case item >= items:
					return
				case item < keyItems:
					// Under the causal mask early keys are seen by more
					// query rows: their tiles cost more, so they go first.
					w.keyTile(item/keyTiles, item%keyTiles)
				default:
					item -= keyItems
					// Late query rows see more keys: their tiles go first.
					w.queryTile(item/queryTiles, queryTiles-1-item%queryTiles)
				}
			}
		})
	}
	wg.Wait()
}

// backwardWorker is one goroutine of a backward pass.
type backwardWorker struct {
	p     backwardProblem
	scale float32
}

// keyTile computes dK and dV of one tile of key rows of one key/value
// head; kvHead counts (batch, key/value head) pairs, batch-major.
func (w *backwardWorker) keyTile(kvHead, tile int) {
	p, s := w.p, w.p.shape
	d := s.HeadDim
	group := s.Heads / s.KVHeads
	batch, kvh := kvHead/s.KVHeads, kvHead%s.KVHeads
	base := kvHead * s.SeqK * d
	k, v := p.k[base:base+s.SeqK*d], p.v[base:base+s.SeqK*d]
	dk, dv := p.dk[base:base+s.SeqK*d], p.dv[base:base+s.SeqK*d]
	first, end := tile*p.tiling.keyRows, min((tile+1)*p.tiling.keyRows, s.SeqK)
	clear(dk[first*d : end*d])
	clear(dv[first*d : end*d])
	firstQuery := 0
	if s.Causal {
		firstQuery = first // top-left causal: key j is seen by query rows i >= j
	}
	for h := range group {
		head := batch*s.Heads + kvh*group + h
		rows := p.q[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
		grads := p.do[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
		lse, delta := p.lse[head*s.SeqQ:(head+1)*s.SeqQ], p.delta[head*s.SeqQ:(head+1)*s.SeqQ]
		for i := firstQuery; i < s.SeqQ; i++ {
			visible := end
			if s.Causal {
				visible = min(end, i+1)
			}
			q, do := rows[i*d:(i+1)*d], grads[i*d:(i+1)*d]
			for j := first; j < visible; j++ {
				weight := exp32(dot(q, k[j*d:(j+1)*d])*w.scale - lse[i])
				ds := weight * (dot(do, v[j*d:(j+1)*d]) - delta[i])
				addScaled(dv[j*d:(j+1)*d], weight, do)
				addScaled(dk[j*d:(j+1)*d], ds, q)
			}
		}
	}
	scaleRow(dk[first*d:end*d], w.scale)
}

// queryTile computes dQ of one tile of query rows of one head; head counts
// (batch, head) pairs, batch-major.
func (w *backwardWorker) queryTile(head, tile int) {
	p, s := w.p, w.p.shape
	d := s.HeadDim
	batch, queryHead := head/s.Heads, head%s.Heads
	kvHead := batch*s.KVHeads + queryHead/(s.Heads/s.KVHeads)
	k, v := p.k[kvHead*s.SeqK*d:(kvHead+1)*s.SeqK*d], p.v[kvHead*s.SeqK*d:(kvHead+1)*s.SeqK*d]
	rows := p.q[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
	grads := p.do[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
	dq := p.dq[head*s.SeqQ*d : (head+1)*s.SeqQ*d]
	lse, delta := p.lse[head*s.SeqQ:(head+1)*s.SeqQ], p.delta[head*s.SeqQ:(head+1)*s.SeqQ]
	first, end := tile*p.tiling.queryRows, min((tile+1)*p.tiling.queryRows, s.SeqQ)
	clear(dq[first*d : end*d])
	keyEnd := s.SeqK
	if s.Causal {
		keyEnd = min(s.SeqK, end)
	}
	// A block of keys, once in cache, serves every row of the tile; each
	// row still takes its keys in order, so the block size changes no bit.
	for block := 0; block < keyEnd; block += p.tiling.keyRows {
		blockEnd := min(block+p.tiling.keyRows, keyEnd)
		for i := first; i < end; i++ {
			visible := blockEnd
			if s.Causal {
				visible = min(blockEnd, i+1)
			}
			q, do, out := rows[i*d:(i+1)*d], grads[i*d:(i+1)*d], dq[i*d:(i+1)*d]
			for j := block; j < visible; j++ {
				weight := exp32(dot(q, k[j*d:(j+1)*d])*w.scale - lse[i])
				ds := weight * (dot(do, v[j*d:(j+1)*d]) - delta[i])
				addScaled(out, ds, k[j*d:(j+1)*d])
			}
		}
	}
	scaleRow(dq[first*d:end*d], w.scale)
}

// addScaled adds a·x to dst.
func addScaled(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// The tensors of attention's backward modes, in the op's order
// (ops/attention): what Prepare reads and what Fetch writes.
var (
	backwardInputs         = []string{"q", "k", "v", "o", "do", "lse"}
	backwardOutputs        = []string{"dq", "dk", "dv"}
	forwardBackwardInputs  = []string{"q", "k", "v", "do"}
	forwardBackwardOutputs = []string{"o", "dq", "dk", "dv"}
)

// loadBackward loads a case of mode bwd or fwd+bwd from the request's
// named tensors: it checks each one's name, dtype and dims against the
// shape, hashes the bytes of every input in order, and allocates the
// outputs. In fwd+bwd the forward pass (run with the backward's tiling)
// writes O and the row log-sum-exps the backward then reads.
func (b *Backend) loadBackward(req sdk.PrepareRequest, tiles tiling) (*preparedCase, string, error) {
	s := req.Shape
	mode := s.Mode.Or()
	inputNames, outputNames := backwardInputs, backwardOutputs
	if mode == sdk.ForwardBackward {
		inputNames, outputNames = forwardBackwardInputs, forwardBackwardOutputs
	}
	if err := checkTensors("input", req.Inputs, inputNames, s); err != nil {
		return nil, "", err
	}
	if err := checkTensors("output", req.Outputs, outputNames, s); err != nil {
		return nil, "", err
	}
	hash := sha256.New()
	in := map[string][]float32{}
	for _, t := range req.Inputs {
		raw, err := os.ReadFile(t.Path)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", t.Name, err)
		}
		if want := t.Bytes(); int64(len(raw)) != want {
			return nil, "", fmt.Errorf("%s file %s has %d bytes, want %d for %s", t.Name, t.Path, len(raw), want, s)
		}
		hash.Write(raw)
		if in[t.Name], err = decode(t.DType, raw); err != nil {
			return nil, "", fmt.Errorf("%s file %s: %w", t.Name, t.Path, err)
		}
	}
	p := backwardProblem{shape: s, q: in["q"], k: in["k"], v: in["v"], o: in["o"], do: in["do"], lse: in["lse"],
		dq: make([]float32, s.QElements()), dk: make([]float32, s.KVElements()), dv: make([]float32, s.KVElements()),
		delta: make([]float32, s.Batch*s.Heads*s.SeqQ), tiling: tiles}
	c := &preparedCase{}
	if mode == sdk.ForwardBackward {
		p.o, p.lse = make([]float32, s.QElements()), make([]float32, s.Batch*s.Heads*s.SeqQ)
		forward := problem{shape: s, q: p.q, k: p.k, v: p.v, out: p.o, lse: p.lse, tiling: tiles}
		c.run = func() {
			b.attend(forward)
			b.backprop(p)
		}
		c.outputs = append(c.outputs, newOutput(p.o, s.DType, req.Outputs[0].Path))
	} else {
		c.run = func() { b.backprop(p) }
	}
	gradients := req.Outputs[len(req.Outputs)-3:]
	c.outputs = append(c.outputs,
		newOutput(p.dq, s.DType, gradients[0].Path),
		newOutput(p.dk, s.DType, gradients[1].Path),
		newOutput(p.dv, s.DType, gradients[2].Path))
	return c, hex.EncodeToString(hash.Sum(nil)), nil
}

// checkTensors checks that files are the tensors named, in order, each in
// the dtype and with the dims the shape gives it.
func checkTensors(kind string, files []sdk.TensorFile, names []string, s sdk.Shape) error {
	if len(files) != len(names) {
		return fmt.Errorf("attention %s wants %d %ss %v, got %d", s.Mode.Or(), len(names), kind, names, len(files))
	}
	for i, f := range files {
		dtype, dims := tensorLayout(names[i], s)
		if f.Name != names[i] || f.DType != dtype || !slices.Equal(f.Dims, dims) {
			return fmt.Errorf("attention %s %s %d: got %s %s%v, want %s %s%v",
				s.Mode.Or(), kind, i+1, f.Name, f.DType, f.Dims, names[i], dtype, dims)
		}
	}
	return nil
}

// tensorLayout is the dtype and dims of attention's tensor of that name.
func tensorLayout(name string, s sdk.Shape) (sdk.DType, []int) {
	switch name {
	case "k", "v", "dk", "dv":
		return s.DType, []int{s.Batch, s.KVHeads, s.SeqK, s.HeadDim}
	case "lse":
		return sdk.FP32, []int{s.Batch, s.Heads, s.SeqQ}
	default: // q, o, do, dq
		return s.DType, []int{s.Batch, s.Heads, s.SeqQ, s.HeadDim}
	}
}
