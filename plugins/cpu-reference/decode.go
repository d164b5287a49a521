package cpureference

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/flashcore/bench/sdk"
)

// decodeOp is the op name of attention over a paged KV cache (flashcore
// list --ops).
const decodeOp = "decode"

// decodeInputs are decode's inputs, in the op's order.
var decodeInputs = []string{"q", "k_cache", "v_cache", "block_table", "cache_seqlens"}

// decodeProblem is one decode case in float32: q [batch, qLen, heads, dim],
// the caches [pages, pageSize, kvHeads, dim], the block table [batch,
// maxPages] and each sequence's length, as the request gave them.
type decodeProblem struct {
	batch, qLen, heads, kvHeads, dim int
	pageSize, maxPages               int
	causal                           bool
	windowLeft                       int     // -1: no window
	softcap                          float32 // 0: none
	q, k, v                          []float32
	table, lengths                   []int32
	out                              []float32
}

// decodeAttention computes every output row. The (sequence, key/value
// head) pairs are shared among the cores; within one, each query row
// walks the keys it sees through the block table: scores, their maximum,
// then the weighted sum of values, in float32 with float64 sums.
func decodeAttention(p decodeProblem) {
	jobs := make(chan int, p.batch*p.kvHeads)
	for j := range p.batch * p.kvHeads {
		jobs <- j
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), p.batch*p.kvHeads) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores := make([]float32, 0, 1024)
			acc := make([]float64, p.dim)
			for job := range jobs {
				b, kvh := job/p.kvHeads, job%p.kvHeads
				group := p.heads / p.kvHeads
				for h := kvh * group; h < (kvh+1)*group; h++ {
					for i := range p.qLen {
						scores = p.row(b, i, h, kvh, scores[:0], acc)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// row computes output row (b, i, h), reusing scores and acc.
func (p decodeProblem) row(b, i, h, kvh int, scores []float32, acc []float64) []float32 {
	length := int(p.lengths[b])
	pos := length - p.qLen + i // the new token's place in its sequence
	first, last := 0, length-1
	if p.causal {
		last = pos
	}
	if p.windowLeft >= 0 {
		first = max(0, pos-p.windowLeft)
	}
	keyAt := func(j int) int {
		page := int(p.table[b*p.maxPages+j/p.pageSize])
		return ((page*p.pageSize+j%p.pageSize)*p.kvHeads + kvh) * p.dim
	}
	row := ((b*p.qLen+i)*p.heads + h) * p.dim
	return attendRow(p.q[row:][:p.dim], p.k, p.v, first, last, keyAt, p.softcap, scores, acc, p.out[row:][:p.dim])
}

// attendRow writes to out one query row of softmax attention over keys
// first..last, key j's row at element keyAt(j) of k and of v: float32
// scores scaled by 1/sqrt(D) and soft-capped when softcap > 0, float64
// sums, the row maximum subtracted. decode and varlen find their keys
// apart (through a block table, through offsets) and attend here. A row
// that sees no key is zeros. It reuses scores and acc and returns scores.
func attendRow(q, k, v []float32, first, last int, keyAt func(int) int, softcap float32, scores []float32, acc []float64, out []float32) []float32 {
	dim := len(q)
	scale := float32(1 / math.Sqrt(float64(dim)))
	peak := float32(math.Inf(-1))
	for j := first; j <= last; j++ {
		kRow := k[keyAt(j):][:dim]
		var dot float32
		for e, x := range q {
			dot += x * kRow[e]
		}
		s := dot * scale
		if softcap > 0 {
			s = softcap * float32(math.Tanh(float64(s/softcap)))
		}
		scores = append(scores, s)
		peak = max(peak, s)
	}
	clear(acc)
	var sum float64
	for j := first; j <= last; j++ {
		w := math.Exp(float64(scores[j-first] - peak))
		sum += w
		for e, x := range v[keyAt(j):][:dim] {
			acc[e] += w * float64(x)
		}
	}
	for e := range out {
		out[e] = 0
		if sum > 0 {
			out[e] = float32(acc[e] / sum)
		}
	}
	return scores
}

// loadDecode reads decode's named inputs, hashes their bytes in order,
// checks the block table and lengths against the pool, and allocates o.
func loadDecode(req sdk.PrepareRequest) (*preparedCase, string, error) {
	raw, hash, err := readNamedInputs(req, decodeOp, decodeInputs)
	if err != nil {
		return nil, "", err
	}
	q, k, table := req.Inputs[0], req.Inputs[1], req.Inputs[3]
	if len(q.Dims) != 4 || len(k.Dims) != 4 || len(table.Dims) != 2 {
		return nil, "", fmt.Errorf("decode wants q[B, q_len, H, D], k_cache[pages, page_size, KVH, D] and block_table[B, max_pages], got q%v, k_cache%v, block_table%v", q.Dims, k.Dims, table.Dims)
	}
	p := decodeProblem{batch: q.Dims[0], qLen: q.Dims[1], heads: q.Dims[2], dim: q.Dims[3],
		pageSize: k.Dims[1], kvHeads: k.Dims[2], maxPages: table.Dims[1],
		causal: req.Params["causal"] == "true", windowLeft: -1}
	if w, err := strconv.Atoi(req.Params["window_left"]); err == nil {
		p.windowLeft = w
	}
	if c, err := strconv.ParseFloat(req.Params["softcap"], 64); err == nil {
		p.softcap = float32(c)
	}
	for _, t := range []struct {
		name string
		dst  *[]float32
	}{{"q", &p.q}, {"k_cache", &p.k}, {"v_cache", &p.v}} {
		if *t.dst, err = decode(q.DType, raw[t.name]); err != nil {
			return nil, "", fmt.Errorf("%s: %w", t.name, err)
		}
	}
	p.table, p.lengths = int32s(raw["block_table"]), int32s(raw["cache_seqlens"])
	if err := p.checkIndices(k.Dims[0]); err != nil {
		return nil, "", err
	}
	p.out = make([]float32, len(p.q))
	return &preparedCase{
		run:     func() { decodeAttention(p) },
		outputs: []*output{newOutput(p.out, q.DType, req.Outputs[0].Path)},
	}, hash, nil
}

// checkIndices refuses lengths and table entries that would read outside
// the pool, so a malformed request is an error rather than a crash.
func (p decodeProblem) checkIndices(pages int) error {
	for b, l := range p.lengths {
		if int(l) < p.qLen || int(l) > p.maxPages*p.pageSize {
			return fmt.Errorf("cache_seqlens[%d] = %d is outside [q_len = %d, max_pages·page_size = %d]", b, l, p.qLen, p.maxPages*p.pageSize)
		}
		for n := range (int(l) + p.pageSize - 1) / p.pageSize {
			if e := p.table[b*p.maxPages+n]; e < 0 || int(e) >= pages {
				return fmt.Errorf("block_table[%d, %d] = %d is outside the pool of %d pages", b, n, e, pages)
			}
		}
	}
	return nil
}

func int32s(data []byte) []int32 {
	out := make([]int32, len(data)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

// readNamedInputs reads the inputs of a request of op, which must be the
// names given, in order, and one output, and hashes their bytes in that
// order: the loading decode and varlen share.
func readNamedInputs(req sdk.PrepareRequest, op string, names []string) (map[string][]byte, string, error) {
	if len(req.Inputs) != len(names) || len(req.Outputs) != 1 {
		return nil, "", fmt.Errorf("%s wants inputs %v and one output, got %d inputs and %d outputs", op, names, len(req.Inputs), len(req.Outputs))
	}
	hash := sha256.New()
	raw := map[string][]byte{}
	for i, t := range req.Inputs {
		if t.Name != names[i] {
			return nil, "", fmt.Errorf("%s input %d is %q, want %q", op, i, t.Name, names[i])
		}
		data, err := os.ReadFile(t.Path)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", t.Name, err)
		}
		if want := t.Bytes(); int64(len(data)) != want {
			return nil, "", fmt.Errorf("%s file %s has %d bytes, want %d", t.Name, t.Path, len(data), want)
		}
		hash.Write(data)
		raw[t.Name] = data
	}
	return raw, hex.EncodeToString(hash.Sum(nil)), nil
}
