package tune

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// These tests exercise the search alone, with a fitness that is a fixed
// function of the configuration, so that its decisions can be replayed and
// compared exactly. The tuner on real plugin processes is tested in cli
// (tune_test.go).

var testSpace = Space{Tunables: []sdk.Tunable{
	{Name: "tile_m", Values: []string{"16", "32", "48", "64", "128"}, Default: "48"},
	{Name: "tile_n", Values: []string{"16", "32", "64", "128"}, Default: "32"},
	{Name: "stages", Values: []string{"1", "2", "3"}, Default: "2"},
	{Name: "warps", Values: []string{"2", "4", "8"}, Default: "4"},
}}

// fitness has its optimum at tile_m=64, tile_n=64, stages=3, warps=4, and
// rejects tile_m=128 with tile_n=128 (as a kernel whose tiles do not fit in
// shared memory would be).
type fitness struct {
	calls    int
	cancelAt int // cancel the context at this call; 0: never
	cancel   context.CancelFunc
}

func (f *fitness) Evaluate(ctx context.Context, _ op.Case, configs []Config, done func(Evaluation) error) error {
	for _, c := range configs {
		if ctx.Err() != nil {
			return nil
		}
		f.calls++
		if f.calls == f.cancelAt {
			f.cancel()
			return nil // the evaluation in flight is lost, as an interrupted run loses it
		}
		e := Evaluation{Config: c, Verdict: "pass", Accepted: true}
		if c["tile_m"] == "128" && c["tile_n"] == "128" {
			e = Evaluation{Config: c, Verdict: "skip", Reason: "needs 270 KB of shared memory"}
		} else {
			e.KernelNs = 1000 + dist(c["tile_m"], 64) + dist(c["tile_n"], 64) + 50*dist(c["stages"], 3) + 20*dist(c["warps"], 4)
		}
		if err := done(e); err != nil {
			return err
		}
	}
	return nil
}

func dist(value string, best float64) float64 {
	v, _ := strconv.ParseFloat(value, 64)
	if v > best {
		return v - best
	}
	return best - v
}

var testCases = []op.Case{attention.NewCase(sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}, op.Normal)}

func search(t *testing.T, ctx context.Context, st *State, eval Evaluator, budget int) error {
	t.Helper()
	return Tune(ctx, st, Job{Space: testSpace, Cases: testCases, Budget: budget, Evaluator: eval,
		Save: func(*State) error { return nil }})
}

func keys(st *State) []string {
	var out []string
	for _, e := range st.Searches[0].Evaluations {
		out = append(out, e.Config.Key())
	}
	return out
}

func TestSameSeedSameSearch(t *testing.T) {
	run := func(seed uint64) []string {
		st := NewState("b", "v", seed, "", DefaultSettings())
		if err := search(t, context.Background(), st, &fitness{}, 40); err != nil {
			t.Fatal(err)
		}
		return keys(st)
	}
	first, again, other := run(1), run(1), run(2)
	if !slices.Equal(first, again) {
		t.Errorf("seed 1 twice gave two searches:\n%v\n%v", first, again)
	}
	if slices.Equal(first, other) {
		t.Error("seeds 1 and 2 gave the same search")
	}
	if first[0] != testSpace.Default().Key() {
		t.Errorf("first evaluation %s, want the defaults %s", first[0], testSpace.Default().Key())
	}
	if len(first) != 40 {
		t.Errorf("%d evaluations, want the budget of 40", len(first))
	}
	seen := map[string]bool{}
	for _, k := range first {
		if seen[k] {
			t.Errorf("%s evaluated twice", k)
		}
		seen[k] = true
	}
}

// The search improves on the defaults and keeps the best it found: the
// fitness has a known optimum, and 40 of 180 configurations should get
// close to it.
func TestSearchBeatsTheDefaults(t *testing.T) {
	st := NewState("b", "v", 1, "", DefaultSettings())
	if err := search(t, context.Background(), st, &fitness{}, 40); err != nil {
		t.Fatal(err)
	}
	best, _ := st.Searches[0].Best()
	def, _ := st.Searches[0].Default(testSpace)
	if !(best.KernelNs < def.KernelNs) {
		t.Errorf("best %v (%s) is no better than the defaults' %v", best.KernelNs, best.Config.Key(), def.KernelNs)
	}
}

// An interrupted search, saved and loaded, goes on exactly as the one that
// was never interrupted: the same candidates, none repeated, none lost but
// the one in flight, which is evaluated again.
func TestResumeContinuesTheSameSearch(t *testing.T) {
	whole := NewState("b", "v", 7, "", DefaultSettings())
	if err := search(t, context.Background(), whole, &fitness{}, 30); err != nil {
		t.Fatal(err)
	}
	for _, cancelAt := range []int{1, 5, 8, 9, 17} {
		ctx, cancel := context.WithCancel(context.Background())
		st := NewState("b", "v", 7, "", DefaultSettings())
		err := search(t, ctx, st, &fitness{cancelAt: cancelAt, cancel: cancel}, 30)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at %d: error %v, want context.Canceled", cancelAt, err)
		}
		path := filepath.Join(t.TempDir(), "state.json")
		if err := st.Save(path); err != nil {
			t.Fatal(err)
		}
		resumed, err := LoadState(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resumed.Searches[0].Evaluations); got != cancelAt-1 {
			t.Errorf("cancel at %d: %d evaluations saved, want %d", cancelAt, got, cancelAt-1)
		}
		if err := search(t, context.Background(), resumed, &fitness{}, 30); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(resumed), keys(whole); !slices.Equal(got, want) {
			t.Errorf("cancel at %d: resumed search\n%v\ndiffers from the whole one\n%v", cancelAt, got, want)
		}
	}
}

// A space smaller than the budget is searched exhaustively and the search
// stops.
func TestSmallSpaceIsExhausted(t *testing.T) {
	small := Space{Tunables: testSpace.Tunables[2:]} // stages × warps: 9 configurations
	st := NewState("b", "v", 1, "", DefaultSettings())
	err := Tune(context.Background(), st, Job{Space: small, Cases: testCases, Budget: 40, Evaluator: &fitness{},
		Save: func(*State) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Searches[0].Evaluations); n != 9 || !st.Searches[0].Exhausted {
		t.Errorf("%d evaluations, exhausted %v; want all 9 and exhausted", n, st.Searches[0].Exhausted)
	}
}

// An evaluator that returns without a result must not spin forever.
func TestNoResultIsAnError(t *testing.T) {
	st := NewState("b", "v", 1, "", DefaultSettings())
	err := search(t, context.Background(), st, evaluatorFunc(func() {}), 10)
	if !errors.Is(err, ErrNoProgress) {
		t.Errorf("error %v, want ErrNoProgress", err)
	}
}

type evaluatorFunc func()

func (f evaluatorFunc) Evaluate(context.Context, op.Case, []Config, func(Evaluation) error) error {
	f()
	return nil
}

// The table a user sees, from a fixed state.
func TestTableGolden(t *testing.T) {
	st := NewState("cuda-v8", "cuda-v8", 1, "", DefaultSettings())
	if err := search(t, context.Background(), st, &fitness{}, 24); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, st, testSpace, false); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	if err := WriteTable(&out, st, testSpace, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "table.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		os.WriteFile(path+".got", out.Bytes(), 0o644)
		t.Errorf("table differs from %s (wrote .got):\n%s", path, out.Bytes())
	}
}

// A case of an op searches the tunables that apply to it alone: an
// rmsnorm case of a variant whose tunables are attention's has one
// configuration, the empty one, and it is the default.
func TestSpaceForAnOp(t *testing.T) {
	space := Space{Tunables: []sdk.Tunable{
		{Name: "rows", Values: []string{"4", "8"}, Default: "8", Ops: []string{"attention"}},
		{Name: "any", Values: []string{"a", "b"}, Default: "a"},
	}}
	if got := space.For("attention"); got.Size() != 4 {
		t.Errorf("attention's space has %d configurations, want 4", got.Size())
	}
	rmsnorm := space.For("rmsnorm")
	if all := rmsnorm.All(); len(all) != 2 || rmsnorm.Default().Key() != "any=a" {
		t.Errorf("rmsnorm's space %v, default %v; want any alone", all, rmsnorm.Default())
	}
	if none := (Space{Tunables: space.Tunables[:1]}).For("rmsnorm"); none.Size() != 1 || len(none.All()[0]) != 0 {
		t.Errorf("a space of attention's tunable alone, for rmsnorm: %v, want the empty configuration", none.All())
	}
	for _, tc := range []struct {
		c    Config
		want bool
	}{
		{Config{"rows": "8", "any": "a"}, true},
		{Config{"any": "a"}, true},
		{Config{}, true},
		{Config{"rows": "4", "any": "a"}, false},
		{Config{"any": "b"}, false},
		{Config{"other": "a"}, false},
	} {
		if got := space.IsDefault(tc.c); got != tc.want {
			t.Errorf("IsDefault(%v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}
