package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/sdk"
)

// liarSuite has one case checked on every row and one checked on a
// sample of rows (full_check_max_pairs is set low so a small case is
// sampled, as the large cases of real suites are).
const liarSuite = `
name = "lies"
[measurement]
warmup_runs = 1
min_samples = 6
time_cap = "100ms"
call_samples = 3
call_timeout = "5s"
[check]
full_check_max_pairs = 8192
sampled_rows = 16
[[cases]]
batch = 1
heads = 2
seq_q = 48
head_dim = 32
[[cases]]
batch = 1
heads = 2
seq_q = 256
head_dim = 32
causal = true
`

// liarPlugins copies the liar test plugin once per lie (the lie is read
// from the executable's name) and returns them in order.
func liarPlugins(t *testing.T, lies ...string) []host.Plugin {
	return pluginCopies(t, "test-liar", "internal/testplugins/liar", lies...)
}

// pluginCopies builds the test plugin at pkg once and copies it under the
// name base-<variant> for each variant, for the test plugins that read what
// to do from their executable's name, and returns them in order.
func pluginCopies(t *testing.T, base, pkg string, variants ...string) []host.Plugin {
	t.Helper()
	built := buildtest.Plugin(t, base, pkg)
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var plugins []host.Plugin
	for _, variant := range variants {
		name := base + "-" + variant
		path := filepath.Join(dir, host.BinaryPrefix+name)
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		plugins = append(plugins, host.Plugin{Name: name, Path: path})
	}
	return plugins
}

// TestEveryLieIsCaughtAndBlamedOnItsTeller runs a backend per kind of lie,
// then the honest control and cpu-reference. Each lie must end as its own
// row's FAIL or ERROR with a reason that says what it did; the honest
// backends' rows after it must PASS (nothing a liar did to shared state
// reaches them), and no plugin process may be left.
func TestEveryLieIsCaughtAndBlamedOnItsTeller(t *testing.T) {
	want := []lieVerdict{
		{"rows-only", results.StatusFail, ""},
		{"fast-clock", results.StatusError, "implausible"},
		{"few-samples", results.StatusError, "returned 1 kernel-time samples; the suite asks for at least min_samples = 6"},
		{"oversamples", results.StatusError, "but the stopping rule ends at 6, where the noise (0%) was below target_noise"},
		{"stops-early", results.StatusError, "which only its time cap allows (100ms in all), but the host timed the whole Run at"},
		{"bad-calls", results.StatusError, "call-time sample 1 is -"},
		{"huge-output", results.StatusFail, "wrong output size: 68719476736 bytes"},
		{"tamper", results.StatusError, "modified its read-only input files during the row (q.bin: sha256 "},
		{"sabotage", results.StatusFail, "directory"},
		{"wreck", results.StatusError, "modified its read-only input files"},
		{"checked-only", results.StatusFail, "the output of the last timed call (L2 hot) is wrong, though the checked call's was right"},
		{"honest", results.StatusPass, ""},
		{"", results.StatusPass, ""},
	}
	run, s, plugins := runLies(t, "lies.toml", liarSuite, want, "no-handshake")
	for _, c := range s.Cases {
		for _, w := range want {
			r := checkLie(t, run, c.ID, w)
			if r != nil && r.Status == results.StatusPass && r.Check != nil && r.Check.Sampled && r.Check.RowSeed == 0 {
				t.Errorf("%s %s: a sampled check with no recorded row seed", c.ID, w.backend())
			}
		}
	}
	silent := backendNamed(run, "test-liar-no-handshake")
	if silent == nil || silent.Available || !silent.Fault {
		t.Errorf("test-liar-no-handshake: %+v, want unavailable with fault set", silent)
	}
	assertNoPluginProcesses(t, plugins)
}

// TestImpossibleCaseIsRefusedBeforeItsInputsExist: a legal but huge shape
// must be skipped, with the reason, before the host generates gigabytes of
// inputs or waits out a deadline.
func TestImpossibleCaseIsRefusedBeforeItsInputsExist(t *testing.T) {
	plugins := liarPlugins(t, "honest")
	plugins = append(plugins, host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	s, err := suite.Parse("huge.toml", []byte(`name = "huge"
[[cases]]
batch = 1
heads = 1
seq_q = 10000000
head_dim = 64
`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins, ResultsPath: filepath.Join(t.TempDir(), "r.json")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range run.Results {
		t.Logf("%s: %s %s", r.Backend, r.Status, r.Reason)
		if r.Status != results.StatusSkip || r.Reason == "" {
			t.Errorf("%s: %s %q, want a SKIP with its reason", r.Backend, r.Status, r.Reason)
		}
	}
	if len(run.Results) != 2 {
		t.Errorf("%d rows, want 2", len(run.Results))
	}
	if run.Cases[0].InputSHA256 != "" {
		t.Errorf("inputs were generated for a case no row runs")
	}
}

// TestRunInterruptedBeforeItsFirstRowListsNoResults: the schema promises
// lists, so a run stopped before any row writes [] rather than null.
func TestRunInterruptedBeforeItsFirstRowListsNoResults(t *testing.T) {
	s, err := suite.Parse("tiny.toml", []byte(tinySuite))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "r.json")
	Run(ctx, Config{Suite: s, Plugins: liarPlugins(t, "honest"), ResultsPath: out})
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "null") || !strings.Contains(string(raw), `"results": []`) {
		t.Errorf("results file of an interrupted run:\n%s", raw)
	}
}

// TestWorkDirsOfDeadHostsAreRemoved: a host killed by SIGKILL cannot
// remove its work directory; the next run removes it, and keeps those of
// hosts still alive.
func TestWorkDirsOfDeadHostsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	dead := filepath.Join(dir, "flashcore-run-2147483646-123")
	alive := filepath.Join(dir, fmt.Sprintf("flashcore-run-%d-456", os.Getppid()))
	other := filepath.Join(dir, "something-else")
	for _, d := range []string{dead, alive, other} {
		if err := os.MkdirAll(filepath.Join(d, "case-000"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeAbandonedWorkDirs(dir)
	for _, c := range []struct {
		path string
		kept bool
	}{{dead, false}, {alive, true}, {other, true}} {
		if _, err := os.Stat(c.path); (err == nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.path), err == nil, c.kept)
		}
	}
}

// clockSuite has a case large enough that the liar's honest work (the
// fp64 reference, in Go) takes a few hundred milliseconds a call, above the
// host clock's CPU slacks, so a lie about time shows in the host's batch.
var clockSuite = clockSuiteOf("clock-lies", 4, 1024)

// clockSuiteOf is a suite of one case, B1 H{heads} S{seqQ} D64, sampled
// briefly, for the clock's lies.
func clockSuiteOf(name string, heads, seqQ int) string {
	return fmt.Sprintf(`
name = %q
[measurement]
warmup_runs = 1
min_samples = 3
time_cap = "200ms"
call_samples = 1
call_timeout = "60s"
[[cases]]
batch = 1
heads = %d
seq_q = %d
head_dim = 64
`, name, heads, seqQ)
}

// TestClockLiesAreCaught: backends that do the work but report less time
// than it takes (a divided clock, the fastest eighth of 8× the samples),
// or time less work than the checked call did (an output replayed by input
// hash, an eighth of the rows), are each an ERROR or FAIL of their own row,
// caught by the host's clock on fresh inputs; the honest control and
// cpu-reference PASS with the host's figures in their facts.
func TestClockLiesAreCaught(t *testing.T) {
	want := []lieVerdict{
		// The batch rule catches them on quick cores; where a slow machine's
		// CPU slack hides a 1-call batch's lie, the marginal rule (batches
		// of 1 and 2 calls) may be first, and either is the host's clock.
		{"slow-clock", results.StatusError, "clock: "},
		// Its fastest eighth, sorted, may also end past the stopping
		// rule's point: the replay then refuses it before the clock does.
		{"best-of-8", results.StatusError, "clock: | the stopping rule ends at"},
		// Replaying an output takes nanoseconds here, which the physical
		// ceiling refuses first; a slower replay meets the host's clock.
		{"cached", results.StatusError, ""},
		{"eighth-rows", results.StatusFail, "the output of a timed call on fresh inputs is wrong"},
		{"honest", results.StatusPass, ""},
		{"", results.StatusPass, ""},
	}
	run, s, _ := runLies(t, "clock.toml", clockSuite, want)
	c := s.Cases[0]
	for _, w := range want {
		r := checkLie(t, run, c.ID, w)
		if r == nil {
			continue
		}
		t.Logf("%-24s kernel %v, host batch %s calls in %s ns (bound %s)", w.backend(),
			time.Duration(medianKernel(r)), r.Facts["host_batch_calls"], r.Facts["host_batch_wall_ns"], r.Facts["host_batch_bound_ns"])
		if w.status == results.StatusPass && (r.Facts["host_batch_wall_ns"] == "" || r.Facts["fresh_input_sha256"] == "") {
			t.Errorf("%s: passed without the host's batch: facts %v", w.backend(), r.Facts)
		}
	}
}

// smallClockSuite is a case whose kernel takes about a millisecond on a
// CPU: below what the batch rule's slacks can tell, so only the marginal
// rule (clock.go) sees the lies.
var smallClockSuite = clockSuiteOf("small-clock-lies", 2, 128)

// TestSmallKernelClockLiesAreCaught: a divided clock about a kernel of a
// millisecond, the fastest eighth of eight times the samples, and the
// first lie told by a plugin that claims a GPU the host does not see, are
// ERRORs by the marginal rule; the honest control and cpu-reference PASS
// with its facts.
func TestSmallKernelClockLiesAreCaught(t *testing.T) {
	if len(hostGPUUUIDs()) > 0 {
		t.Skip("on a GPU machine the claims-gpu liar earns a GPU's slack, and the timing audit is its check")
	}
	want := []lieVerdict{
		// The marginal rule catches them on quiet cores; on loaded ones the
		// batch rule may be first, and either is the host's clock.
		{"slow-clock", results.StatusError, "clock: "},
		{"best-of-8", results.StatusError, "clock: | the stopping rule ends at"},
		// A divided clock that pads the host's short batches (told apart
		// by the calls they ask for) outside its timed spans, so that the
		// marginal rule's difference shrinks: the fixed part shows it.
		{"padded-clock", results.StatusError, "clock: "},
		// On loaded cores its kernel samples may exceed its call times
		// first ("inconsistent"): another rule, the same lie.
		{"claims-gpu", results.StatusError, ""},
		{"honest", results.StatusPass, ""},
		{"", results.StatusPass, ""},
	}
	run, s, _ := runLies(t, "small-clock.toml", smallClockSuite, want)
	for _, w := range want {
		r := checkLie(t, run, s.Cases[0].ID, w)
		if r == nil {
			continue
		}
		t.Logf("%-24s kernel %v, %s more calls at %s ns a call (bound %s)", w.backend(), time.Duration(medianKernel(r)),
			r.Facts["host_marginal_calls"], r.Facts["host_marginal_call_ns"], r.Facts["host_marginal_bound_ns"])
		if w.status == results.StatusPass && r.Facts["host_marginal_call_ns"] == "" {
			t.Errorf("%s: passed without the marginal rule: facts %v", w.backend(), r.Facts)
		}
	}
}

func TestJudgeMarginal(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name                           string
		n                              int
		short, long, shortSum, longSum time.Duration
		want                           string
	}{
		{"honest, a small gap per call", 100, 30 * ms, 60 * ms, 28 * ms, 56 * ms, ""},
		{"honest, the fixed part is large", 100, 130 * ms, 160 * ms, 28 * ms, 56 * ms, ""},
		{"honest, preempted inside its spans", 10, 50 * ms, 150 * ms, 45 * ms, 140 * ms, ""},
		{"honest, preempted inside the short batch", 8, 90 * ms, 60 * ms, 85 * ms, 56 * ms, ""},
		{"honest, the sums' difference lost in noise", 8, 40 * ms, 75 * ms, 60 * ms, 58 * ms, ""},
		{"a clock divided by 8 at 400 µs", 200, 90 * ms, 170 * ms, 10 * ms, 20 * ms, "an honest call takes the host at most"},
		{"a clock divided by 8 at 2 ms", 20, 45 * ms, 85 * ms, 5 * ms, 10 * ms, "(2ms a call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeMarginal(tt.n, tt.short, tt.long, tt.shortSum, tt.longSum)
			if (tt.want == "") != (v.reason == "") || !strings.Contains(v.reason, tt.want) {
				t.Errorf("judgeMarginal = %q (%.2f of the bound), want %q", v.reason, v.excess, tt.want)
			}
		})
	}
}

// TestMarginalVerdict: the long batch is judged against the quickest
// short one, so a short batch slowed by the machine (seen on a loaded CI
// machine: the first batch on fresh inputs) does not let a lie pass, and
// an honest backend slowed in any one batch still passes.
func TestMarginalVerdict(t *testing.T) {
	ms := time.Millisecond
	// batch is a batch of calls that took the host wall and for each of
	// which the backend reported kernel.
	batch := func(calls int, wall, kernel time.Duration) timedBatch {
		times := make([]time.Duration, calls)
		for i := range times {
			times[i] = kernel
		}
		return timedBatch{wall: wall, samples: sdk.Samples{KernelTimes: times}}
	}
	tests := []struct {
		name   string
		n      int
		shorts []timedBatch
		long   timedBatch
		want   string
	}{
		// 18 ms calls reported as 2.25 ms; the first short batch took 1.8× as
		// long, its reported times 1/8 of that more.
		{"a clock divided by 8, the first short batch slowed", 16,
			[]timedBatch{batch(16, 518*ms, 4050*time.Microsecond), batch(16, 288*ms, 2250*time.Microsecond)},
			batch(32, 576*ms, 2250*time.Microsecond), "an honest call takes the host at most"},
		{"a clock divided by 8, the short batch run after the long one slowed", 16,
			[]timedBatch{batch(16, 290*ms, 2250*time.Microsecond), batch(16, 520*ms, 4050*time.Microsecond)},
			batch(32, 576*ms, 2250*time.Microsecond), "an honest call takes the host at most"},
		{"honest, the first short batch slowed inside its calls", 2,
			[]timedBatch{batch(2, 72*ms, 36*ms), batch(2, 37*ms, 18*ms)}, batch(4, 73*ms, 18*ms), ""},
		{"honest, the long batch slowed inside its calls", 2,
			[]timedBatch{batch(2, 37*ms, 18*ms), batch(2, 36*ms, 18*ms)}, batch(4, 110*ms, 27*ms), ""},
		{"honest, a stall between the long batch's calls", 2,
			[]timedBatch{batch(2, 37*ms, 18*ms), batch(2, 36*ms, 18*ms)}, batch(4, 93*ms, 18*ms), ""},
		{"honest, microsecond calls", 200,
			[]timedBatch{batch(200, 45*ms, 200*time.Microsecond), batch(200, 42*ms, 200*time.Microsecond)},
			batch(400, 85*ms, 200*time.Microsecond), ""},
		// 1 ms calls reported as 125 µs, every short batch padded with 200 ms
		// outside the timed spans: long − short passes, the fixed part not.
		{"a clock divided by 8, every short batch padded", 320,
			[]timedBatch{batch(320, 525*ms, 125*time.Microsecond), batch(320, 520*ms, 125*time.Microsecond)},
			batch(640, 640*ms, 125*time.Microsecond), "a batch of no calls would take 400ms"},
		{"honest, both short batches stalled", 200,
			[]timedBatch{batch(200, 61*ms, 200*time.Microsecond), batch(200, 60*ms, 200*time.Microsecond)},
			batch(400, 82*ms, 200*time.Microsecond), ""},
		// Seen on loaded cores: a backend that makes one untimed call per
		// Run (the test plugins' call sample) beside 186 ms calls.
		{"honest, an untimed call in every Run", 1,
			[]timedBatch{batch(1, 365*ms, 186*ms)}, batch(2, 597*ms, 190*ms), ""},
		{"honest, half-second calls, the short one slowed by 4%", 1,
			[]timedBatch{batch(1, 520*ms, 500*ms)}, batch(2, 1000*ms, 1000*ms), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := marginalVerdict(tt.n, tt.shorts, tt.long, 0, sdk.Device{Kind: "cpu"})
			if (tt.want == "") != (v.reason == "") || !strings.Contains(v.reason, tt.want) {
				t.Errorf("marginalVerdict = %q (%.2f of the bound), want %q", v.reason, v.excess, tt.want)
			}
		})
	}
	// longMinusShort is the marginal rule alone (long − short), against one
	// of a case's short batches.
	longMinusShort := func(i, short int) batchVerdict {
		tt, s := tests[i], tests[i].shorts[short]
		return judgeMarginal(tt.n, s.wall, tt.long.wall, sumDurations(s.samples.KernelTimes), sumDurations(tt.long.samples.KernelTimes))
	}
	// The padded case passes the marginal rule alone: only the fixed part
	// catches it.
	if v := longMinusShort(len(tests)-4, 1); v.reason != "" {
		t.Errorf("the padded lie is caught by long − short (%q): the case does not test the fixed part", v.reason)
	}
	// The first case is the one the quickest short batch is for: judged
	// by long − short against the slowed batch alone, the lie passes (the
	// fixed part would still catch it: two rules, one lie).
	if v := longMinusShort(0, 0); v.reason != "" {
		t.Errorf("against the slowed short batch alone the lie is caught (%q): the case does not test the quickest batch", v.reason)
	}
}

// TestShortLooksSlowed: another short batch is run after the long one
// exactly when the quickest short batch so far took the host longer a
// call than the long batch, beyond what the Run's fixed part explains.
func TestShortLooksSlowed(t *testing.T) {
	ms := time.Millisecond
	batch := func(wall time.Duration) timedBatch { return timedBatch{wall: wall} }
	tests := []struct {
		name   string
		shorts []timedBatch
		long   timedBatch
		want   bool
	}{
		{"the CI case: the first short batch slowed 1.8×", []timedBatch{batch(518 * ms)}, batch(576 * ms), true},
		{"slowed by 10%", []timedBatch{batch(44 * ms)}, batch(80 * ms), true},
		{"honest, the fixed part over half the calls", []timedBatch{batch(42 * ms)}, batch(82 * ms), false},
		{"honest, the long batch stalled", []timedBatch{batch(40 * ms)}, batch(110 * ms), false},
		{"a liar's short batch as quick a call as its long one", []timedBatch{batch(288 * ms)}, batch(576 * ms), false},
		{"the quickest of two counts", []timedBatch{batch(518 * ms), batch(290 * ms)}, batch(576 * ms), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shortLooksSlowed(tt.shorts, tt.long); got != tt.want {
				t.Errorf("shortLooksSlowed = %v, want %v", got, tt.want)
			}
		})
	}
}

// lieVerdict is how one liar's rows must end: the backend is
// test-liar-<lie>, or cpu-reference for "".
type lieVerdict struct {
	lie    string
	status results.Status
	reason string // a part of the row's reason; " | " between parts any of which will do
}

// reasonMatches says whether reason holds want, or one of want's parts
// where want lists several (" | "): a lie that two checks catch may meet
// either first.
func reasonMatches(reason, want string) bool {
	for _, part := range strings.Split(want, " | ") {
		if strings.Contains(reason, part) {
			return true
		}
	}
	return false
}

func (w lieVerdict) backend() string {
	if w.lie == "" {
		return "cpu-reference"
	}
	return "test-liar-" + w.lie
}

// runLies runs the suite text on a liar per verdict (and per extra lie,
// which has no rows to judge) and cpu-reference.
func runLies(t *testing.T, name, text string, want []lieVerdict, extra ...string) (*results.Run, *suite.Suite, []host.Plugin) {
	t.Helper()
	return runLiesWith(t, name, text, want, Config{}, extra...)
}

// runLiesWith is runLies with the settings of cfg (its suite, plugins,
// results path and host options are the test's).
func runLiesWith(t *testing.T, name, text string, want []lieVerdict, cfg Config, extra ...string) (*results.Run, *suite.Suite, []host.Plugin) {
	t.Helper()
	var lies []string
	for _, w := range want {
		if w.lie != "" {
			lies = append(lies, w.lie)
		}
	}
	plugins := liarPlugins(t, append(lies, extra...)...)
	plugins = append(plugins, host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	s, err := suite.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Suite, cfg.Plugins, cfg.ResultsPath = s, plugins, filepath.Join(t.TempDir(), "results.json")
	cfg.HostOptions = host.Options{StartTimeout: 3 * time.Second}
	run, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return run, s, plugins
}

// checkLie finds the row of w's backend on case id and checks its status
// and reason; nil when there is no row (an error then).
func checkLie(t *testing.T, run *results.Run, id string, w lieVerdict) *results.Result {
	t.Helper()
	r := find(run, id, w.backend())
	if r == nil {
		t.Errorf("%s %s: no row", id, w.backend())
		return nil
	}
	t.Logf("%s %-24s %-5s %s", id, w.backend(), r.Status, r.Reason)
	if r.Status != w.status || !reasonMatches(r.Reason, w.reason) {
		t.Errorf("%s %s: %s %q, want %s containing %q", id, w.backend(), r.Status, r.Reason, w.status, w.reason)
	}
	return r
}

func medianKernel(r *results.Result) int64 {
	if len(r.Timings) == 0 {
		return 0
	}
	return int64(r.Timings[0].Kernel.MedianNs)
}

// TestImpostorIsRefused: a plugin installed as test-liar-impostor that
// names its row "cpu-reference" is refused, as a fault, whether or not the
// real cpu-reference is in the run, and no row of the run carries the name
// it claimed but the real one's.
func TestImpostorIsRefused(t *testing.T) {
	s, err := suite.Parse("lies.toml", []byte(liarSuite))
	if err != nil {
		t.Fatal(err)
	}
	real := host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")}
	for _, withReal := range []bool{false, true} {
		plugins := liarPlugins(t, "impostor")
		if withReal {
			plugins = append(plugins, real)
		}
		run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		b := backendNamed(run, "test-liar-impostor")
		if b == nil || b.Available || !b.Fault || !strings.Contains(b.UnavailableReason, `refused: it names a row "cpu-reference", which is cpu-reference's`) {
			t.Errorf("with the real one %v: %+v, want refused as a fault", withReal, b)
		}
		for _, r := range run.Results {
			if r.Label == "cpu-reference" && r.Backend != "cpu-reference" {
				t.Errorf("row labelled cpu-reference comes from %s", r.Backend)
			}
		}
	}
}
