package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
)

// rowFacts is what must agree between a sharded and an unsharded run of
// one suite: which rows there are, on which inputs, with which verdict.
func rowFacts(t *testing.T, path string) []string {
	t.Helper()
	run, err := results.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{}
	for _, c := range run.Cases {
		inputs[c.ID] = c.InputSHA256
	}
	var facts []string
	for _, r := range run.Results {
		facts = append(facts, fmt.Sprintf("%s %s %s input=%s case-input=%s loaded=%s %s", r.CaseID, r.Backend, r.Label,
			r.InputSHA256, inputs[r.CaseID], r.LoadedSHA256, r.Status))
	}
	slices.Sort(facts)
	return facts
}

// bridgePluginDir is cpu-reference and pytorch-sdpa, real plugins; the
// bridge runs torch on the CPU here.
func bridgePluginDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("FLASHCORE_PYTHON") == "" {
		t.Skip("FLASHCORE_PYTHON is not set: the pytorch-sdpa rows need the project's venv (make test sets it)")
	}
	return pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference", "pytorch-sdpa": "plugins/pytorch-sdpa/cmd/flashcore-backend-pytorch-sdpa"})
}

// TestShardsMergeToTheUnshardedRun runs a suite whole and as three shards,
// each a flashcore run of its own with real plugin processes, merges the
// shards, and checks the merged file has the same rows, input hashes and
// verdicts as the whole run.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": bridgePluginDir(t)}
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.json")
	if _, stderr, code := runMain(t, env, "run", "--suite", "testdata/shards.toml", "--out", whole, "--format", "csv"); code != ExitOK {
		t.Fatalf("whole run: exit %d\n%s", code, stderr)
	}
	var shards []string
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if _, stderr, code := runMain(t, env, "run", "--suite", "testdata/shards.toml", "--shard", fmt.Sprintf("%d/3", i), "--out", out, "--format", "csv"); code != ExitOK {
			t.Fatalf("shard %d: exit %d\n%s", i, code, stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged.json")
	_, stderr, code := runMain(t, env, append([]string{"merge", merged, "--format", "csv"}, shards...)...)
	if code != ExitOK || !strings.Contains(stderr, "merged 3 of 3 shard(s): 6 case(s), 18 row(s)") {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	want, got := rowFacts(t, whole), rowFacts(t, merged)
	if len(want) != 18 || !slices.Equal(want, got) {
		t.Errorf("merged rows differ from the unsharded run's:\nwhole:\n%s\nmerged:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	for i, path := range shards {
		if n := len(rowFacts(t, path)); n == 0 || n == 18 {
			t.Errorf("shard %d holds %d of 18 rows: not a slice", i, n)
		}
	}

	_, stderr, code = runMain(t, env, "merge", filepath.Join(dir, "partial.json"), shards[0], shards[2])
	if code != ExitFailures || !strings.Contains(stderr, "partial.json is incomplete: missing shard(s) 1/3") {
		t.Errorf("merge without shard 1: exit %d, want %d naming it\n%s", code, ExitFailures, stderr)
	}
}

// TestMergeRefusesOtherSeeds: a shard of the same suite under another seed
// measured other inputs; merging it is refused and nothing is written.
func TestMergeRefusesOtherSeeds(t *testing.T) {
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})}
	dir := t.TempDir()
	for i, seed := range []string{"1", "2"} {
		out := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		if _, stderr, code := runMain(t, env, "run", "--suite", "testdata/small.toml", "--shard", fmt.Sprintf("%d/2", i), "--seed", seed, "--out", out); code != ExitOK {
			t.Fatalf("shard %d: exit %d\n%s", i, code, stderr)
		}
	}
	merged := filepath.Join(dir, "merged.json")
	_, stderr, code := runMain(t, env, "merge", merged, filepath.Join(dir, "s0.json"), filepath.Join(dir, "s1.json"))
	golden(t, "merge-refused-seed", strings.ReplaceAll(stderr, dir, "DIR"))
	if code != ExitOther {
		t.Errorf("exit %d, want %d", code, ExitOther)
	}
	if _, err := os.Stat(merged); err == nil {
		t.Error("a refused merge wrote its output")
	}
}

// TestDevicesRefusedWithoutGPUs: with no nvidia-smi to list GPUs,
// --devices is refused before any plugin starts.
func TestDevicesRefusedWithoutGPUs(t *testing.T) {
	_, stderr, code := runMain(t, map[string]string{"PATH": t.TempDir()}, "run", "--suite", "testdata/small.toml", "--devices", "all", "--out", "")
	golden(t, "usage-devices-without-gpu", stderr)
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
}
