package shard

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
)

func part(index, count int, rows ...results.Result) *results.Run {
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		Tool:          results.Tool{Version: "v1", GitCommit: "abc"},
		Status:        results.RunComplete,
		Suite:         results.Suite{Name: "s", SHA256: "5u1te", Seed: 7},
		Backends:      []results.Backend{{Name: "b", Available: true}},
		Shard:         &results.Shard{Index: index, Count: count},
	}
	for _, r := range rows {
		run.Cases = append(run.Cases, results.Case{ID: r.CaseID, InputSHA256: "in-" + r.CaseID})
		run.Results = append(run.Results, r)
	}
	return run
}

func row(caseID string, status results.Status) results.Result {
	return results.Result{CaseID: caseID, Backend: "b", Variant: "v", Label: "v", Status: status, InputSHA256: "in-" + caseID}
}

func TestMergeRefusesWhatDoesNotBelongTogether(t *testing.T) {
	otherSeed := part(1, 2, row("c2", results.StatusPass))
	otherSeed.Suite.Seed = 8
	otherTool := part(1, 2, row("c2", results.StatusPass))
	otherTool.Tool.Version = "v2"
	otherSuite := part(1, 2, row("c2", results.StatusPass))
	otherSuite.Suite.SHA256 = "edited"
	otherInputs := part(1, 2, row("c1", results.StatusPass))
	otherInputs.Cases[0].InputSHA256 = "different"
	whole := part(0, 1, row("c2", results.StatusPass))
	whole.Shard = nil
	for _, tc := range []struct {
		name   string
		second *results.Run
		err    string
	}{
		{"seed", otherSeed, `a.json and b.json differ in seed: "7" against "8"; merge only slices of one run`},
		{"tool", otherTool, `a.json and b.json differ in flashcore version: "v1 abc" against "v2 abc"; merge only slices of one run`},
		{"suite", otherSuite, `a.json and b.json differ in suite hash: "5u1te" against "edited"; merge only slices of one run`},
		{"count", part(1, 3, row("c2", results.StatusPass)), `b.json is shard 1/3, but the inputs before it are shards of 2`},
		{"twice", part(0, 2, row("c2", results.StatusPass)), `shard 0/2 is both a.json and b.json`},
		{"whole", whole, `b.json mixes whole runs and shards: merge the shards of one run`},
		{"inputs", otherInputs, `case c1 has input hash in-c1 in a.json but different in b.json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Merge([]Input{{"a.json", part(0, 2, row("c1", results.StatusPass))}, {"b.json", tc.second}}, "merge")
			if err == nil || err.Error() != tc.err {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestMergeRefusesARowTwiceWithDifferentValues(t *testing.T) {
	a := part(0, 2, row("c1", results.StatusPass))
	b := part(1, 2, row("c1", results.StatusFail), row("c2", results.StatusPass))
	_, _, err := Merge([]Input{{"a.json", a}, {"b.json", b}}, "merge")
	if err == nil || !strings.Contains(err.Error(), "row c1 / v (b) is in a.json and in b.json with different values (pass against fail)") {
		t.Errorf("error %v", err)
	}
}

func TestMergeListsMissingShardsAndKeepsEqualRowsOnce(t *testing.T) {
	a := part(0, 4, row("c1", results.StatusPass))
	c := part(2, 4, row("c3", results.StatusPass), row("c1", results.StatusPass))
	run, rep, err := Merge([]Input{{"a.json", a}, {"c.json", c}}, "merge")
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Missing; len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("missing %v, want [1 3]", got)
	}
	if rep.Duplicates != 1 || len(run.Results) != 2 || run.Status != results.RunIncomplete || len(run.Parts) != 2 {
		t.Errorf("duplicates %d, rows %d, status %s, parts %d; want 1, 2, incomplete, 2", rep.Duplicates, len(run.Results), run.Status, len(run.Parts))
	}
}

// TestMergeKeepsSuiteOrder: each shard holds its cases in suite order;
// the merge interleaves them back into that order.
func TestMergeKeepsSuiteOrder(t *testing.T) {
	a := part(0, 2, row("c1", results.StatusPass), row("c3", results.StatusPass), row("c4", results.StatusPass))
	b := part(1, 2, row("c2", results.StatusPass), row("c3", results.StatusPass), row("c5", results.StatusPass))
	b.Results = append(b.Results[:1], b.Results[2]) // c3's row is a's alone
	run, _, err := Merge([]Input{{"b.json", b}, {"a.json", a}}, "merge")
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, c := range run.Cases {
		at[c.ID] = i
	}
	for _, in := range []*results.Run{a, b} {
		for i := 1; i < len(in.Cases); i++ {
			if at[in.Cases[i-1].ID] > at[in.Cases[i].ID] {
				t.Errorf("merged cases %v put %s before %s, against a shard's order", run.Cases, in.Cases[i].ID, in.Cases[i-1].ID)
			}
		}
	}
	if run.Status != results.RunComplete {
		t.Errorf("status %s", run.Status)
	}
}
