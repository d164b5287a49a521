package inputs

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"sync"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// Tensors are the inputs of one case, encoded as the backends read them.
type Tensors struct {
	Shape sdk.Shape
	// Q, K and V are the raw little-endian bytes in Shape.DType, layout
	// [batch, heads, seq, head_dim].
	Q, K, V []byte
	// DO is dO, the gradient of the output, in the backward modes (nil in
	// forward): the same layout and dtype as Q.
	DO []byte
	// SHA256 is the hex SHA-256 of Q, K and V concatenated.
	SHA256 string
	// Mask is the case's mask beyond Shape.Causal (attention.MaskOf):
	// its alignment, window and soft-capping. nil is Shape.Causal alone,
	// top-left (Masking).
	Mask *mask.Mask
	// references keeps the fp64 reference rows computed for these
	// inputs (Reference, KeepReference): every row of a case is checked
	// against the same reference, checked run and timed output alike,
	// so each reference row is computed once per case.
	references sync.Map // flat row index → []float64
}

// Masking is the mask of the case: Mask, or mask.Plain(Shape.Causal)
// when it is nil.
func (t *Tensors) Masking() mask.Mask {
	if t.Mask != nil {
		return *t.Mask
	}
	return mask.Plain(t.Shape.Causal)
}

// Reference is the reference output of query row flat (the row's index
// in [batch, heads, seq_q] order) kept for these inputs, if one was.
// The row is shared: read it, never write it.
func (t *Tensors) Reference(flat int) ([]float64, bool) {
	row, ok := t.references.Load(flat)
	if !ok {
		return nil, false
	}
	return row.([]float64), true
}

// KeepReference keeps the reference output of query row flat, computed
// from these inputs, for Reference.
func (t *Tensors) KeepReference(flat int, row []float64) { t.references.Store(flat, row) }

// Generate builds the inputs of case c under the suite's seed. It spreads
// the work over every CPU; the result does not depend on how.
func Generate(seed uint64, c op.Case) *Tensors {
	s := attention.ShapeOf(c)
	m := attention.MaskOf(c.Params)
	t := &Tensors{Shape: s, Mask: &m}
	t.Q = generateTensor(NewStream(seed, c.ID, TensorQ), c.Distribution, s.DType, s.QElements())
	t.K = generateTensor(NewStream(seed, c.ID, TensorK), c.Distribution, s.DType, s.KVElements())
	t.V = generateTensor(NewStream(seed, c.ID, TensorV), c.Distribution, s.DType, s.KVElements())
	t.SHA256 = HashInputs(t.Q, t.K, t.V)
	if s.Mode.Or() != sdk.Forward {
		t.DO = generateTensor(NewStream(seed, c.ID, TensorDO), c.Distribution, s.DType, s.QElements())
	}
	return t
}

// HashInputs is the input hash of the contract: the hex SHA-256 of Q, K and
// V concatenated.
func HashInputs(q, k, v []byte) string {
	h := sha256.New()
	h.Write(q)
	h.Write(k)
	h.Write(v)
	return hex.EncodeToString(h.Sum(nil))
}

// chunkElements is the work unit of one goroutine step: even, so a
// Box–Muller pair never straddles two chunks, and large enough that the
// scheduling costs nothing.
const chunkElements = 1 << 16

func generateTensor(s Stream, dist op.Distribution, dtype sdk.DType, n int) []byte {
	out := make([]byte, n*dtype.Size())
	chunks := (n + chunkElements - 1) / chunkElements
	next := make(chan int, chunks)
	for i := range chunks {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(chunks, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			values := make([]float64, chunkElements)
			for chunk := range next {
				lo := chunk * chunkElements
				hi := min(lo+chunkElements, n)
				s.fill(values[:hi-lo], dist, lo)
				encodeInto(out[lo*dtype.Size():], dtype, values[:hi-lo])
			}
		}()
	}
	wg.Wait()
	return out
}

// fill writes elements first, first+1, ... of the stream into values.
// first is even; each Box–Muller pair is computed once.
func (s Stream) fill(values []float64, dist op.Distribution, first int) {
	if dist == op.Uniform {
		for i := range values {
			values[i] = 2*s.Uniform(first+i) - 1
		}
		return
	}
	for i := 0; i < len(values); i += 2 {
		x, y := s.normalPair(first + i)
		values[i] = x
		if i+1 < len(values) {
			values[i+1] = y
		}
	}
	if dist == op.Outliers {
		for i := range values {
			if isOutlier(s.Word(first + i)) {
				values[i] *= OutlierScale
			}
		}
	}
}

// Draw returns the n elements of input number index (0-based, in the op's
// order) of a case, in dtype: every op's inputs come from this one
// generator, so each tensor's values depend on the seed, the case and its
// place alone (docs/inputs.md).
func Draw(seed uint64, caseID string, index int, dist op.Distribution, dtype sdk.DType, n int) []byte {
	return generateTensor(NewStream(seed, caseID, Tensor(index)), dist, dtype, n)
}
