package cpureference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	attentionop "github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// backwardShapes cover what the capabilities promise of the backward
// modes: odd lengths, causal and not, grouped-query heads, SeqQ on either
// side of SeqK (keys no causal row sees must get zero gradients), one
// query row, and a head dim that is not a multiple of 4.
var backwardShapes = []struct {
	name  string
	shape sdk.Shape
}{
	{"tile multiples", shape(1, 2, 2, 64, 64, 64, false)},
	{"odd lengths causal", shape(2, 3, 3, 45, 45, 64, true)},
	{"gqa seq_q<seq_k causal", shape(1, 4, 2, 37, 70, 64, true)},
	{"mqa seq_q>seq_k causal", shape(1, 4, 1, 70, 33, 32, true)},
	{"gqa seq_q>seq_k", shape(2, 4, 2, 50, 31, 64, false)},
	{"single query row", shape(1, 2, 2, 1, 70, 64, false)},
	{"head dim 7 causal", shape(1, 2, 1, 45, 45, 7, true)},
}

// backwardCase writes the inputs of the case of shape s in mode, as the
// host generates and writes them, and returns the case, its inputs and the
// request that names them.
func backwardCase(t *testing.T, s sdk.Shape, mode sdk.Mode, tunables map[string]string) (op.Case, *op.Inputs, sdk.PrepareRequest) {
	t.Helper()
	s.Mode = mode
	c := attentionop.NewCase(s, op.Normal)
	in := ops.Of(c).Generate(1, c)
	dir := t.TempDir()
	files := ops.InputFiles(in, dir, "")
	for i, f := range files {
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	req := ops.PrepareRequest(c, variantName, tunables, files, ops.OutputFiles(c, dir, "out"), in.SHA256)
	return c, in, req
}

func readOutputs(t *testing.T, files []sdk.TensorFile) [][]byte {
	t.Helper()
	out := make([][]byte, len(files))
	for i, f := range files {
		out[i] = readFile(t, f.Path)
	}
	return out
}

// checkBackward fails t for every output that fails the check flashcore
// run applies (conformance.CheckOutputs).
func checkBackward(t *testing.T, c op.Case, in *op.Inputs, outputs [][]byte) {
	t.Helper()
	names := ops.Of(c).Spec().OutputsOf(c.Params)
	for i, r := range conformance.CheckOutputs(c, in, outputs) {
		if r.Verdict != check.Pass {
			t.Errorf("%s: %s (max abs err %.3g, rel L2 %.3g)", names[i].Name, r.Reason, r.MaxAbsErr, r.RelL2Err)
		}
	}
}

// Both backward modes in every dtype, through Prepare and Fetch as the
// host drives them, pass the check of flashcore run: every gradient
// against the fp64 reference backward, and in fwd+bwd O against the
// forward reference.
func TestBackwardPassesTheCheck(t *testing.T) {
	for _, mode := range []sdk.Mode{sdk.Backward, sdk.ForwardBackward} {
		for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
			for _, tc := range backwardShapes {
				t.Run(fmt.Sprintf("%s/%s/%s", mode, dtype, tc.name), func(t *testing.T) {
					s := tc.shape
					s.DType = dtype
					c, in, req := backwardCase(t, s, mode, nil)
					b := newBackend()
					prepared := mustPrepare(t, b, req)
					if prepared.LoadedSHA256 != in.SHA256 {
						t.Errorf("LoadedSHA256 %s, want the hash of every input in order %s", prepared.LoadedSHA256, in.SHA256)
					}
					if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
						t.Fatalf("Fetch: %v", err)
					}
					checkBackward(t, c, in, readOutputs(t, req.Outputs))
				})
			}
		}
	}
}

// randomBackward is a backward problem on normal inputs: Q, K, V and dO
// from a fixed seed, O and the row log-sum-exps from the forward pass.
func randomBackward(s sdk.Shape, seed uint64) backwardProblem {
	fwd := randomProblem(s, 1, seed)
	fwd.lse = make([]float32, s.Batch*s.Heads*s.SeqQ)
	attentionWith(fwd, 1)
	rng := rand.New(rand.NewPCG(seed, 1))
	do := make([]float32, s.QElements())
	for i := range do {
		do[i] = float32(rng.NormFloat64())
	}
	return backwardProblem{shape: s, q: fwd.q, k: fwd.k, v: fwd.v, o: fwd.out, do: do, lse: fwd.lse,
		dq: make([]float32, s.QElements()), dk: make([]float32, s.KVElements()), dv: make([]float32, s.KVElements()),
		delta: make([]float32, s.Batch*s.Heads*s.SeqQ)}
}

// The split of the backward never changes a bit: every gradient row is
// added up by one goroutine in a fixed order, whatever the tiles and the
// number of workers.
func TestBackwardChangesNoBitAcrossTilings(t *testing.T) {
	p := randomBackward(shape(1, 4, 2, 70, 53, 32, true), 3)
	backwardWith(p, 1)
	want := [][]float32{slices.Clone(p.dq), slices.Clone(p.dk), slices.Clone(p.dv)}
	for _, rows := range tunables[0].Values {
		for _, keys := range tunables[1].Values {
			for _, workers := range []string{"1", "4"} {
				tiles, diags := tilingOf("attention", map[string]string{tunableQueryRows: rows, tunableKeyRows: keys, tunableWorkers: workers})
				if len(diags) > 0 {
					t.Fatalf("declared values refused: %+v", diags)
				}
				p.tiling = tiles
				for _, g := range [][]float32{p.dq, p.dk, p.dv} {
					for i := range g {
						g[i] = poisoned
					}
				}
				backward(p)
				for i, g := range [][]float32{p.dq, p.dk, p.dv} {
					if !slices.Equal(g, want[i]) {
						t.Errorf("query_tile_rows=%s key_block_rows=%s workers=%s: %s differs from the single-worker default's",
							rows, keys, workers, backwardOutputs[i])
					}
				}
			}
		}
	}
}

// The forward pass's log-sum-exps, which fwd+bwd's backward reads, are
// the fp64 reference's to float32 precision.
func TestForwardLogSumExp(t *testing.T) {
	for _, tc := range attentionCases {
		t.Run(tc.name, func(t *testing.T) {
			p := randomProblem(tc.shape, tc.spread, 4)
			p.lse = make([]float32, tc.shape.Batch*tc.shape.Heads*tc.shape.SeqQ)
			p.tiling = tiling{queryRows: 16, keyRows: 32}
			attentionWith(p, 2)
			tensors, _ := fp32Tensors(p)
			want := reference.ComputeForward(tensors).LSE
			for i, got := range p.lse {
				if diff := math.Abs(float64(got) - want[i]); diff > 1e-5*max(1, math.Abs(want[i])) {
					t.Fatalf("row %d: lse %g, want %g (|difference| %.3g)", i, got, want[i], diff)
				}
			}
		})
	}
}

// Fetch poisons every output before the pass: a backward that writes
// only dQ leaves dK and dV all poison, and a fwd+bwd whose forward writes
// nothing leaves O all poison.
func TestFetchPoisonsEveryBackwardOutput(t *testing.T) {
	s := shape(1, 2, 1, 20, 30, 16, true)
	s.DType = sdk.BF16
	tests := []struct {
		mode   sdk.Mode
		broken func(b *Backend)
		want   []bool // each output all poison
	}{
		{sdk.Backward, func(b *Backend) { b.backprop = func(p backwardProblem) { clear(p.dq) } }, []bool{false, true, true}},
		{sdk.ForwardBackward, func(b *Backend) {
			b.attend = func(problem) {}
			b.backprop = func(p backwardProblem) { clear(p.dq); clear(p.dk); clear(p.dv) }
		}, []bool{true, false, false, false}},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			_, _, req := backwardCase(t, s, tc.mode, nil)
			b := newBackend()
			mustPrepare(t, b, req)
			if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
				t.Fatal(err)
			}
			tc.broken(b)
			if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
				t.Fatal(err)
			}
			for i, f := range req.Outputs {
				raw := readFile(t, f.Path)
				poisoned := countPoisoned(raw, 2)
				if all := poisoned == len(raw)/2; all != tc.want[i] {
					t.Errorf("%s: %d of %d elements poison, want all poison: %v", f.Name, poisoned, len(raw)/2, tc.want[i])
				}
			}
		})
	}
}

// Run writes the outputs of its last call to every timed file, and they
// pass the check.
func TestRunWritesEveryTimedOutput(t *testing.T) {
	for _, mode := range []sdk.Mode{sdk.Backward, sdk.ForwardBackward} {
		t.Run(string(mode), func(t *testing.T) {
			s := shape(1, 4, 2, 33, 40, 32, true)
			s.DType = sdk.FP16
			c, in, req := backwardCase(t, s, mode, map[string]string{tunableWorkers: "2"})
			b := newBackend()
			mustPrepare(t, b, req)
			timed := ops.OutputFiles(c, filepath.Dir(req.Outputs[0].Path), "timed")
			m := sdk.Measurement{WarmupRuns: 1, MinSamples: 3, MaxSamples: 4, TargetNoise: 0.5,
				TimeCap: time.Second, L2: sdk.L2Hot, CallSamples: 2}
			if _, err := b.Run(context.Background(), sdk.RunRequest{CaseID: req.CaseID, Measurement: m,
				Output: timed[0].Path, Outputs: timed}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkBackward(t, c, in, readOutputs(t, timed))
		})
	}
}

// A backward request whose tensors are not the mode's, in its order and
// layout, is not loaded.
func TestBackwardRefusesOtherTensors(t *testing.T) {
	s := shape(1, 4, 2, 16, 24, 8, false)
	s.DType = sdk.FP16
	tests := []struct {
		name   string
		change func(req *sdk.PrepareRequest)
		want   string
	}{
		{"an input missing", func(req *sdk.PrepareRequest) { req.Inputs = req.Inputs[:5] }, "wants 6 inputs"},
		{"inputs swapped", func(req *sdk.PrepareRequest) { req.Inputs[1], req.Inputs[2] = req.Inputs[2], req.Inputs[1] }, "input 2: got v"},
		{"lse in fp16", func(req *sdk.PrepareRequest) { req.Inputs[5].DType = sdk.FP16 }, "input 6: got lse fp16"},
		{"dk with query heads", func(req *sdk.PrepareRequest) { req.Outputs[1].Dims = []int{1, 4, 24, 8} }, "output 2: got dk fp16[1 4 24 8]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, req := backwardCase(t, s, sdk.Backward, nil)
			tc.change(&req)
			prepared, err := newBackend().Prepare(context.Background(), req)
			if err != nil || len(prepared.Diagnostics) != 1 || prepared.Diagnostics[0].Severity != sdk.Failure ||
				!strings.Contains(prepared.Diagnostics[0].Detail, tc.want) {
				t.Errorf("Prepare = %+v, %v; want a failure whose detail contains %q", prepared, err, tc.want)
			}
		})
	}
}

func BenchmarkBackward(b *testing.B) {
	for _, s := range []sdk.Shape{
		shape(1, 8, 8, 512, 512, 64, false),
		shape(1, 8, 8, 512, 512, 64, true),
	} {
		s.Mode = sdk.Backward
		b.Run(s.String(), func(b *testing.B) {
			p := randomBackward(s, 1)
			for b.Loop() {
				backward(p)
			}
			flops := attentionop.FLOPs(s, mask.Plain(s.Causal)) // the bench's work model: 2.5 forward passes
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
