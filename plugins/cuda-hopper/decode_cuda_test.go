//go:build cuda

package cudahopper

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/cudakit"
	_ "github.com/flashcore/bench/cudakit/gpu/gputest" // skip the binary without a GPU
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// decodeInputs are one decode case's inputs as the op's contract lays them
// out: the pages of every sequence scattered through the pool in a random
// order, the block table's entries past a sequence's last page pointing to
// poison pages, and poison (keys ±8, values 100) in every slot no sequence
// owns, the slots past L of a last page among them.
type decodeInputs struct {
	seqlens []int
	table   []int
	q, k, v []float64 // as stored in the dtype
	data    [][]byte  // the tensors in the op's order
	sha256  string
}

func makeDecodeInputs(s decodeShape, seed uint64) decodeInputs {
	rng := rand.New(rand.NewPCG(seed, 0xdec0de))
	var in decodeInputs
	maxPages, numPages := s.maxPages(), s.numPages()
	for b := range s.batch {
		n := s.contextLen
		if b > 0 {
			switch s.dist {
			case "uniform":
				n = s.qLen + int(rng.Float64()*float64(s.contextLen-s.qLen))
			case "long-tail":
				n = s.qLen + int(math.Pow(rng.Float64(), 4)*float64(s.contextLen-s.qLen))
			}
		}
		in.seqlens = append(in.seqlens, max(s.qLen, min(n, s.contextLen)))
	}
	pool := rng.Perm(numPages)
	used := 0
	for _, n := range in.seqlens {
		used += (n + s.pageSize - 1) / s.pageSize
	}
	poison := pool[used:]
	next := 0
	for _, n := range in.seqlens {
		pages := (n + s.pageSize - 1) / s.pageSize
		for p := range maxPages {
			if p < pages {
				in.table = append(in.table, pool[next])
				next++
			} else {
				in.table = append(in.table, poison[rng.IntN(len(poison))])
			}
		}
	}
	slot := s.kvHeads * s.dim
	in.k = make([]float64, numPages*s.pageSize*slot)
	in.v = make([]float64, len(in.k))
	for i := range in.k {
		in.k[i] = 8
		if rng.IntN(2) == 0 {
			in.k[i] = -8
		}
		in.v[i] = 100
	}
	for b, n := range in.seqlens {
		for j := range n {
			at := (in.table[b*maxPages+j/s.pageSize]*s.pageSize + j%s.pageSize) * slot
			for e := range slot {
				in.k[at+e] = rng.NormFloat64()
				in.v[at+e] = rng.NormFloat64()
			}
		}
	}
	in.q = make([]float64, s.batch*s.qLen*s.heads*s.dim)
	for i := range in.q {
		in.q[i] = rng.NormFloat64()
	}
	// Round to the dtype: the reference takes the values as stored.
	for _, x := range [][]float64{in.q, in.k, in.v} {
		copy(x, inputs.Decode(s.dtype, inputs.Encode(s.dtype, x)))
	}
	in.data = [][]byte{inputs.Encode(s.dtype, in.q), inputs.Encode(s.dtype, in.k), inputs.Encode(s.dtype, in.v),
		int32Bytes(in.table), int32Bytes(in.seqlens)}
	h := sha256.New()
	for _, d := range in.data {
		h.Write(d)
	}
	in.sha256 = hex.EncodeToString(h.Sum(nil))
	return in
}

func int32Bytes(xs []int) []byte {
	out := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(x)))
	}
	return out
}

// decodeReference is row (b, i, h) of o in fp64, gathering the sequence's
// keys through the block table: bottom-right causal, window_left, softcap.
func decodeReference(s decodeShape, in decodeInputs, b, i, h int) []float64 {
	kvh := h / (s.heads / s.kvHeads)
	n := in.seqlens[b]
	p := n - s.qLen + i
	hi := n
	if s.causal {
		hi = p + 1
	}
	lo := 0
	if s.window >= 0 {
		lo = max(0, p-s.window)
	}
	scale := 1 / math.Sqrt(float64(s.dim))
	q := in.q[((b*s.qLen+i)*s.heads+h)*s.dim:][:s.dim]
	var scores []float64
	var rows []int
	best := math.Inf(-1)
	for j := lo; j < hi; j++ {
		at := ((in.table[b*s.maxPages()+j/s.pageSize]*s.pageSize+j%s.pageSize)*s.kvHeads + kvh) * s.dim
		var dot float64
		for e := range s.dim {
			dot += q[e] * in.k[at+e]
		}
		dot *= scale
		if s.softcap > 0 {
			dot = s.softcap * math.Tanh(dot/s.softcap)
		}
		scores = append(scores, dot)
		rows = append(rows, at)
		best = max(best, dot)
	}
	out := make([]float64, s.dim)
	var sum float64
	for n, sc := range scores {
		w := math.Exp(sc - best)
		sum += w
		for e := range s.dim {
			out[e] += w * in.v[rows[n]+e]
		}
	}
	for e := range out {
		out[e] /= sum
	}
	return out
}

// checkDecodeOutput compares every row of o with the reference, by the
// default tolerances of the dtype: each element within atol + rtol·|ref|,
// the relative L2 error within rel_l2, no NaN or Inf (the output starts as
// 0xFF poison, NaN in both half types).
func checkDecodeOutput(t *testing.T, what string, s decodeShape, in decodeInputs, out []byte) {
	t.Helper()
	got := inputs.Decode(s.dtype, out)
	if len(got) != s.batch*s.qLen*s.heads*s.dim {
		t.Fatalf("%s: %d elements, want %d", what, len(got), s.batch*s.qLen*s.heads*s.dim)
	}
	tol := op.DefaultTolerances()[s.dtype]
	var err2, ref2 float64
	bad := 0
	for b := range s.batch {
		for i := range s.qLen {
			for h := range s.heads {
				row := (b*s.qLen+i)*s.heads + h
				want := decodeReference(s, in, b, i, h)
				for e, w := range want {
					g := got[row*s.dim+e]
					d := math.Abs(g - w)
					err2 += (g - w) * (g - w)
					ref2 += w * w
					if !(d <= tol.Atol+tol.Rtol*math.Abs(w)) {
						if bad < 3 {
							t.Errorf("%s: o[b %d, i %d, h %d, %d] = %.6g, want %.6g (L %d)", what, b, i, h, e, g, w, in.seqlens[b])
						}
						bad++
					}
				}
			}
		}
	}
	if rel := math.Sqrt(err2 / ref2); bad > 0 || !(rel <= tol.RelL2) {
		t.Errorf("%s: %d elements outside atol + rtol·|ref|, relative L2 error %.3g (rel_l2 %.3g)", what, bad, rel, tol.RelL2)
	}
}

// decodeGPUCases cover every kernel and the edges: GQA rows packed over
// several row blocks, q_len > 1 bottom-right causal, windows (0 included),
// softcap, non-causal, page sizes that are not tile multiples, one key,
// forced splits with empty ones, unequal lengths.
func decodeGPUCases() []struct {
	shape    decodeShape
	tunables map[string]string
} {
	type tc = struct {
		shape    decodeShape
		tunables map[string]string
	}
	var out []tc
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		for _, dim := range []int{64, 128} {
			for _, tile := range []string{"64", "128"} {
				for _, stages := range []string{"2", "3"} {
					tun := map[string]string{decodeTileN: tile, decodeStages: stages}
					out = append(out,
						tc{decodeShape{batch: 3, qLen: 1, heads: 8, kvHeads: 2, dim: dim, pageSize: 16, contextLen: 77, dtype: dtype,
							causal: true, window: -1, dist: "uniform"}, tun},
						tc{decodeShape{batch: 2, qLen: 5, heads: 16, kvHeads: 2, dim: dim, pageSize: 48, contextLen: 301, dtype: dtype,
							causal: true, window: 40, dist: "long-tail"}, with(tun, numSplits, "4")},
						tc{decodeShape{batch: 2, qLen: 3, heads: 6, kvHeads: 3, dim: dim, pageSize: 32, contextLen: 200, dtype: dtype,
							causal: false, window: -1, softcap: 30, dist: "equal"}, with(tun, numSplits, "8")})
				}
			}
		}
	}
	out = append(out,
		tc{decodeShape{batch: 1, qLen: 1, heads: 4, kvHeads: 4, dim: 128, pageSize: 16, contextLen: 1, dtype: sdk.FP16,
			causal: true, window: -1, dist: "equal"}, nil},
		tc{decodeShape{batch: 1, qLen: 1, heads: 4, kvHeads: 4, dim: 128, pageSize: 16, contextLen: 1, dtype: sdk.FP16,
			causal: true, window: -1, dist: "equal"}, map[string]string{numSplits: "4"}},
		tc{decodeShape{batch: 2, qLen: 16, heads: 64, kvHeads: 8, dim: 128, pageSize: 16, contextLen: 1000, dtype: sdk.FP16,
			causal: true, window: -1, dist: "uniform"}, nil},
		tc{decodeShape{batch: 2, qLen: 16, heads: 64, kvHeads: 8, dim: 128, pageSize: 16, contextLen: 1000, dtype: sdk.BF16,
			causal: false, window: 100, softcap: 50, dist: "uniform"}, map[string]string{numSplits: "8", decodeTileN: "128", decodeStages: "2"}},
		tc{decodeShape{batch: 4, qLen: 1, heads: 32, kvHeads: 8, dim: 128, pageSize: 16, contextLen: 4096, dtype: sdk.FP16,
			causal: true, window: 0, dist: "equal"}, nil},
		tc{decodeShape{batch: 3, qLen: 2, heads: 8, kvHeads: 1, dim: 64, pageSize: 64, contextLen: 999, dtype: sdk.BF16,
			causal: true, window: -1, softcap: 20, dist: "long-tail"}, map[string]string{numSplits: "16"}},
		tc{decodeShape{batch: 1, qLen: 1, heads: 32, kvHeads: 8, dim: 128, pageSize: 16, contextLen: 8192, dtype: sdk.FP16,
			causal: true, window: -1, dist: "equal"}, nil},
	)
	return out
}

// TestDecodeOnGPU runs decode cases through the backend in process, as
// flashcore run drives a row (Prepare from the files, the checked Fetch,
// a timed Run), against an fp64 reference that gathers the pages itself.
// It needs the decode op in the ops registry (Prepare checks the files
// against its declaration) and a Hopper GPU.
func TestDecodeOnGPU(t *testing.T) {
	b := New().(*cudakit.Backend)
	t.Cleanup(func() { b.Close() })
	desc, err := b.Describe(context.Background())
	if err != nil || !desc.Available {
		t.Fatalf("Describe: %v, %+v", err, desc)
	}
	for n, c := range decodeGPUCases() {
		name := fmt.Sprintf("%02d-B%d-q%d-H%d-%d-D%d-p%d-L%d-%s-%s-causal%v-w%d-cap%g-%v", n, c.shape.batch, c.shape.qLen, c.shape.heads,
			c.shape.kvHeads, c.shape.dim, c.shape.pageSize, c.shape.contextLen, c.shape.dtype, c.shape.dist, c.shape.causal,
			c.shape.window, c.shape.softcap, c.tunables)
		name = strings.NewReplacer(" ", "", "map[", "", "]", "", ":", "=").Replace(name)
		t.Run(name, func(t *testing.T) { runDecodeCase(t, b, desc.Variants[0].Name, name, c.shape, c.tunables) })
	}
}

func runDecodeCase(t *testing.T, b sdk.Backend, variant, id string, s decodeShape, tunables map[string]string) {
	ctx := context.Background()
	dir := t.TempDir()
	in := makeDecodeInputs(s, 42)
	files, outputs := s.files(dir)
	for i, f := range files {
		if err := os.WriteFile(f.Path, in.data[i], 0o444); err != nil {
			t.Fatal(err)
		}
	}
	prepared, err := b.Prepare(ctx, sdk.PrepareRequest{CaseID: id, Variant: variant, Op: decodeOp, Params: s.params(),
		Inputs: files, Outputs: outputs, Tunables: tunables, InputSHA256: in.sha256})
	if err != nil || len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: %v %+v", err, prepared.Diagnostics)
	}
	defer func() {
		if err := b.Release(ctx, sdk.ReleaseRequest{CaseID: id}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if prepared.LoadedSHA256 != in.sha256 {
		t.Errorf("LoadedSHA256 %s, want %s", prepared.LoadedSHA256, in.sha256)
	}
	var first []byte
	for run := 1; run <= 2; run++ {
		if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: id}); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		out, err := os.ReadFile(outputs[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		if run == 1 {
			checkDecodeOutput(t, "checked run", s, in, out)
			first = out
		} else if string(out) != string(first) {
			t.Error("nondeterministic: the second checked run differs from the first")
		}
	}
	m := sdk.DefaultMeasurement()
	m.TimeCap = time.Second
	timed := outputs[0]
	timed.Path = dir + "/timed-o.bin"
	samples, err := b.Run(ctx, sdk.RunRequest{CaseID: id, Measurement: m, Output: timed.Path, Outputs: []sdk.TensorFile{timed}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	out, err := os.ReadFile(timed.Path)
	if err != nil {
		t.Fatal(err)
	}
	checkDecodeOutput(t, "last timed call", s, in, out)
	kernel := sdk.MedianDuration(samples.KernelTimes)
	var keys float64
	for _, n := range in.seqlens {
		if s.window >= 0 {
			n = min(n, s.window+s.qLen)
		}
		keys += float64(n)
	}
	bytes := keys*float64(2*s.kvHeads*s.dim*s.dtype.Size()) + float64(2*len(in.q)*s.dtype.Size()+4*(len(in.table)+len(in.seqlens)))
	t.Logf("TIMING %s: kernel %.2f µs, %.0f GB/s (K/V of the visible keys, q, o, table), %s, grid %s",
		id, kernel.Seconds()*1e6, bytes/kernel.Seconds()/1e9, prepared.Facts["kernel_function"], prepared.Facts["grid"])
}
