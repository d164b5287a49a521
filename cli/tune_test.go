package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/tune"
	"github.com/flashcore/bench/internal/buildtest"
)

// The tune tests run real plugin processes: cpu-reference, whose tunables
// split real work, and test-tunables, whose misbehaving values crash,
// write NaN or are refused. They assert on what was evaluated and how it
// was judged, never on which configuration is faster.

// tuneSuite is one small case, measured briefly.
const tuneSuite = `name = "tune"
seed = 11
[measurement]
warmup_runs = 1
min_samples = 5
max_samples = 8
time_cap = "50ms"
call_samples = 1
[[cases]]
batch = 1
heads = 2
seq_q = 64
head_dim = 32
dtype = "fp16"
`

func writeTuneSuite(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.toml")
	if err := os.WriteFile(path, []byte(tuneSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func evaluationKeys(t *testing.T, statePath string) []string {
	t.Helper()
	st, err := tune.LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Searches) != 1 {
		t.Fatalf("%d searches in the state, want 1", len(st.Searches))
	}
	var keys []string
	for _, e := range st.Searches[0].Evaluations {
		keys = append(keys, e.Config.Key())
	}
	return keys
}

func checkDistinct(t *testing.T, keys []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Errorf("%s evaluated twice", k)
		}
		seen[k] = true
	}
}

// The first generation is drawn from the seed alone: the same seed gives
// the same candidates, another seed others.
func TestTuneReplaysWithTheSameSeed(t *testing.T) {
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})}
	suitePath := writeTuneSuite(t)
	tuneOnce := func(seed string) []string {
		dir := t.TempDir()
		state := filepath.Join(dir, "state.json")
		_, stderr, code := runMain(t, env, "tune", "--backend", "cpu-reference", "--suite", suitePath,
			"--budget", "6", "--population", "6", "--seed", seed, "--resume", state, "--out", filepath.Join(dir, "best.toml"))
		if code != ExitOK {
			t.Fatalf("tune --seed %s: exit %d\n%s", seed, code, stderr)
		}
		return evaluationKeys(t, state)
	}
	first, again, other := tuneOnce("3"), tuneOnce("3"), tuneOnce("4")
	if !slices.Equal(first, again) {
		t.Errorf("seed 3 twice evaluated\n%v\nand\n%v", first, again)
	}
	if slices.Equal(first, other) {
		t.Errorf("seeds 3 and 4 evaluated the same candidates %v", first)
	}
	if len(first) != 6 || first[0] != "key_block_rows=64,query_tile_rows=32,workers=auto" {
		t.Errorf("evaluated %v; want 6, the defaults first", first)
	}
	checkDistinct(t, first)
}

// A search interrupted by SIGINT writes its state and exits 130; resumed,
// it keeps every finished evaluation, repeats none and stops at the budget.
// The best configuration goes to a tuned file that a suite can name.
func TestTuneResumesAfterAnInterrupt(t *testing.T) {
	flashcore := buildtest.Binary(t, "flashcore", "cmd/flashcore")
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	suitePath := writeTuneSuite(t)
	work := t.TempDir()
	state, best := filepath.Join(work, "state.json"), filepath.Join(work, "best.toml")
	args := []string{"tune", "--backend", "cpu-reference", "--suite", suitePath, "--budget", "14",
		"--population", "4", "--resume", state, "--out", best}

	cmd := exec.Command(flashcore, args...)
	cmd.Env = append(os.Environ(), "FLASHCORE_PLUGIN_PATH="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err := tune.LoadState(state); err == nil && len(st.Searches) == 1 && len(st.Searches[0].Evaluations) >= 2 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
		t.Fatalf("interrupted tune: %v, want exit %d\n%s", err, ExitInterrupted, stderr.String())
	}
	before := evaluationKeys(t, state)
	if len(before) < 2 || len(before) >= 14 {
		t.Fatalf("%d evaluations saved at the interrupt, want at least 2 and fewer than the budget", len(before))
	}

	_, errOut, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, args...)
	if code != ExitOK {
		t.Fatalf("resumed tune: exit %d\n%s", code, errOut)
	}
	after := evaluationKeys(t, state)
	if len(after) != 14 || !slices.Equal(after[:len(before)], before) {
		t.Errorf("resumed search evaluated\n%v\nwant the %d evaluations before the interrupt\n%v\nfollowed by new ones up to 14", after, len(before), before)
	}
	checkDistinct(t, after)

	tuned, err := suite.LoadTuned(best)
	if err != nil {
		t.Fatal(err)
	}
	if len(tuned.Cases) != 1 || tuned.Backend != "cpu-reference" || len(tuned.Cases[0].Tunables) != 3 {
		t.Fatalf("tuned file %+v: want one case with the 3 tunables of cpu-reference", tuned)
	}
	checkTunedRun(t, dir, suitePath, best, tuned.Cases[0].Tunables)
}

// checkTunedRun runs a suite that names the tuned file and checks that its
// row ran the tuned configuration.
func checkTunedRun(t *testing.T, pluginPath, tunePath, best string, tunables map[string]string) {
	t.Helper()
	text, err := os.ReadFile(tunePath)
	if err != nil {
		t.Fatal(err)
	}
	suitePath := filepath.Join(filepath.Dir(best), "use-tuned.toml")
	use := string(text) + "[[backends]]\nname = \"cpu-reference\"\ntuned = \"" + filepath.Base(best) + "\"\n"
	if err := os.WriteFile(suitePath, []byte(use), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": pluginPath},
		"run", "--suite", suitePath, "--out", filepath.Join(filepath.Dir(best), "r.json"), "--format", "csv")
	if code != ExitOK {
		t.Fatalf("run with the tuned file: exit %d\n%s", code, stderr)
	}
	want := "cpu-reference[" + tune.Config(tunables).Key() + "]"
	if !strings.Contains(stdout, want) {
		t.Errorf("the run's rows do not include %s:\n%s", want, stdout)
	}
}

// Candidates that crash the plugin, write NaN or are refused are rejected
// with their reasons, and the search goes on through all of them.
func TestTuneRejectsCrashingFailingAndRefusedCandidates(t *testing.T) {
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": pluginDir(t, map[string]string{"test-tunables": "internal/testplugins/tunables"})}
	work := t.TempDir()
	state := filepath.Join(work, "state.json")
	stdout, stderr, code := runMain(t, env, "tune", "--backend", "test-tunables", "--suite", writeTuneSuite(t),
		"--budget", "16", "--population", "8", "--resume", state, "--out", filepath.Join(work, "best.toml"))
	if code != ExitOK {
		t.Fatalf("tune: exit %d\n%s\n%s", code, stdout, stderr)
	}
	st, err := tune.LoadState(state)
	if err != nil {
		t.Fatal(err)
	}
	evaluations := st.Searches[0].Evaluations
	if len(evaluations) != 16 {
		t.Fatalf("%d evaluations, want all 16 configurations", len(evaluations))
	}
	want := map[string]struct{ verdict, reason string }{
		"ok":     {"pass", ""},
		"crash":  {"error", "plugin crashed"},
		"nan":    {"fail", "NaN"},
		"refuse": {"skip", "needs 300000 bytes of shared memory"},
	}
	for _, e := range evaluations {
		w := want[e.Config["mode"]]
		if e.Verdict != w.verdict || e.Accepted != (w.verdict == "pass") || !strings.Contains(e.Reason, w.reason) {
			t.Errorf("%s: verdict %s, accepted %v, reason %q; want %s with a reason containing %q",
				e.Config.Key(), e.Verdict, e.Accepted, e.Reason, w.verdict, w.reason)
		}
	}
	best, ok := st.Searches[0].Best()
	if !ok || best.Config["mode"] != "ok" {
		t.Errorf("best %+v, want a mode=ok configuration", best)
	}
	if !strings.Contains(stdout, "rejected (") {
		t.Errorf("the table names no rejected candidate:\n%s", stdout)
	}
}

func TestTuneUsageErrors(t *testing.T) {
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": pluginDir(t, map[string]string{"test-echo": "internal/testplugins/echo"})}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"without-backend", []string{"tune"}, ExitUsage},
		{"zero-budget", []string{"tune", "--backend", "cpu-reference", "--budget", "0"}, ExitUsage},
		{"no-tunables", []string{"tune", "--backend", "test-echo", "--suite", "testdata/small.toml"}, ExitUsage},
		{"unknown-case", []string{"tune", "--backend", "test-echo", "--suite", "testdata/small.toml", "--cases", "b9-h9-s9-d64-fp16"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, env, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			golden(t, "tune-usage-"+tt.name, stdout+stderr)
		})
	}
}
