package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
)

// TestRunMixedOps runs a suite of attention and rmsnorm cases through the
// real cpu-reference plugin: every case of both ops is prepared from its
// named tensors, checked against its op's reference and timed, and the
// results file records each case's op and params.
func TestRunMixedOps(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	out := filepath.Join(t.TempDir(), "r.json")
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"run", "--suite", "testdata/mixed-ops.toml", "--out", out)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, c := range run.Cases {
		ops[c.Op]++
		if c.Op == "rmsnorm" && (c.Params["rows"] == "" || c.Params["cols"] == "" || c.Shape.Batch != 0) {
			t.Errorf("rmsnorm case %s: params %v shape %+v", c.ID, c.Params, c.Shape)
		}
	}
	if ops["attention"] != 1 || ops["rmsnorm"] != 9 {
		t.Errorf("cases by op %v, want 1 attention and 9 rmsnorm", ops)
	}
	for _, r := range run.Results {
		if r.Status != results.StatusPass {
			t.Errorf("%s %s: %s %s", r.CaseID, r.Label, r.Status, r.Reason)
		}
		if len(r.Timings) == 0 || r.Derived.GBps <= 0 {
			t.Errorf("%s: timings %d, %g GB/s", r.CaseID, len(r.Timings), r.Derived.GBps)
		}
	}
	for _, want := range []string{"rmsnorm 33x200 fp32", "rmsnorm 3x8 bf16", "B1 H2 S40 D64 fp16"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table does not name the case %q:\n%s", want, stdout)
		}
	}
}

// TestRunMixedOpsSweepingATunableOfOneOp sweeps the cpu-reference's
// attention tunable over two values in a suite of attention and rmsnorm:
// the attention case gets a row per value, labelled with it, and each
// rmsnorm case one row, labelled without it, whose request carried none.
func TestRunMixedOpsSweepingATunableOfOneOp(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	out := filepath.Join(t.TempDir(), "r.json")
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"run", "--suite", "testdata/mixed-ops-tunables.toml", "--out", out)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	opOf := map[string]string{}
	for _, c := range run.Cases {
		opOf[c.ID] = c.Op
	}
	labels := map[string][]string{} // by op
	for _, r := range run.Results {
		if r.Status != results.StatusPass {
			t.Errorf("%s %s: %s %s", r.CaseID, r.Label, r.Status, r.Reason)
		}
		op := opOf[r.CaseID]
		labels[op] = append(labels[op], r.Label)
		switch op {
		case "attention":
			if len(r.Tunables) != 1 || r.Tunables["query_tile_rows"] == "" || !strings.Contains(r.Label, "query_tile_rows="+r.Tunables["query_tile_rows"]) {
				t.Errorf("attention row %q: tunables %v, want query_tile_rows in both", r.Label, r.Tunables)
			}
		case "rmsnorm":
			if len(r.Tunables) != 0 || r.Label != r.Variant {
				t.Errorf("rmsnorm row %q: tunables %v, want none, labelled %q", r.Label, r.Tunables, r.Variant)
			}
		}
	}
	if len(labels["attention"]) != 2 || labels["attention"][0] == labels["attention"][1] {
		t.Errorf("attention rows %q, want one per value of query_tile_rows", labels["attention"])
	}
	if len(labels["rmsnorm"]) != 2 {
		t.Errorf("rmsnorm rows %q, want one per case (2)", labels["rmsnorm"])
	}
}

// TestMixedOpsFindWrongOutputs runs the same suite with a plugin that
// writes zeros: every rmsnorm row, like the attention row, FAILs with the
// reason, and the honest plugin beside it still PASSes.
func TestMixedOpsFindWrongOutputs(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference", "test-zeros": "internal/testplugins/zeros"})
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, _ := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"run", "--suite", "testdata/mixed-ops.toml", "--out", out)
	run, err := results.Load(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	byBackend := map[string]map[results.Status]int{}
	for _, r := range run.Results {
		if byBackend[r.Backend] == nil {
			byBackend[r.Backend] = map[results.Status]int{}
		}
		byBackend[r.Backend][r.Status]++
		if r.Backend == "test-zeros" && !strings.Contains(r.Reason, "all zeros") {
			t.Errorf("%s %s: %s %q, want a FAIL for the zeros", r.CaseID, r.Label, r.Status, r.Reason)
		}
	}
	if byBackend["test-zeros"][results.StatusFail] != 10 || byBackend["cpu-reference"][results.StatusPass] != 10 {
		t.Errorf("verdicts by backend %v, want 10 FAIL for test-zeros and 10 PASS for cpu-reference", byBackend)
	}
}

// TestListOps is `flashcore list --ops` against its golden file.
func TestListOps(t *testing.T) {
	stdout, stderr, code := runMain(t, nil, "list", "--ops")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "list-ops", stdout)
}
