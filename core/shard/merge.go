package shard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// Input is one results file to merge, with the name errors call it by.
type Input struct {
	Source string
	Run    *results.Run
}

// Report is what a merge found beside the merged run.
type Report struct {
	// Count is the number of shards the inputs were cut into; 0 when they
	// are not shards.
	Count int
	// Missing are the shard indexes no input holds.
	Missing []int
	// Unfinished names the inputs whose run did not complete.
	Unfinished []string
	// Duplicates counts rows present in two inputs with identical values
	// (the same file given twice), kept once.
	Duplicates int
}

// Complete is true when every shard is there and every input completed.
func (r Report) Complete() bool { return len(r.Missing) == 0 && len(r.Unfinished) == 0 }

// Merge checks that the inputs are slices of one run (same suite hash,
// seed and flashcore version, the same shard count, no shard twice) and
// combines them. It refuses a row present in two inputs with different
// values: which one is right cannot be told.
func Merge(inputs []Input, command string) (*results.Run, Report, error) {
	if len(inputs) == 0 {
		return nil, Report{}, fmt.Errorf("nothing to merge")
	}
	if err := checkAgree(inputs); err != nil {
		return nil, Report{}, err
	}
	report, err := checkShards(inputs)
	if err != nil {
		return nil, Report{}, err
	}
	run, dups, err := Combine(inputs, command)
	if err != nil {
		return nil, Report{}, err
	}
	report.Duplicates = dups
	for _, in := range inputs {
		if in.Run.Status != results.RunComplete {
			report.Unfinished = append(report.Unfinished, fmt.Sprintf("%s (%s)", in.Source, in.Run.Status))
		}
	}
	if !report.Complete() {
		run.Status = results.RunIncomplete
	}
	return run, report, nil
}

// checkAgree refuses inputs that were not made from the same suite file,
// seed and flashcore build.
func checkAgree(inputs []Input) error {
	first := inputs[0]
	for _, in := range inputs[1:] {
		for _, f := range []struct{ what, a, b string }{
			{"suite hash", first.Run.Suite.SHA256, in.Run.Suite.SHA256},
			{"suite name", first.Run.Suite.Name, in.Run.Suite.Name},
			{"seed", fmt.Sprint(first.Run.Suite.Seed), fmt.Sprint(in.Run.Suite.Seed)},
			{"flashcore version", toolName(first.Run.Tool), toolName(in.Run.Tool)},
		} {
			if f.a != f.b {
				return fmt.Errorf("%s and %s differ in %s: %q against %q; merge only slices of one run", first.Source, in.Source, f.what, f.a, f.b)
			}
		}
	}
	return nil
}

func toolName(t results.Tool) string { return strings.TrimSpace(t.Version + " " + t.GitCommit) }

// checkShards finds the shard count and the missing shards, and refuses a
// mix of shards and whole runs, different counts, or one shard twice.
func checkShards(inputs []Input) (Report, error) {
	var report Report
	seen := map[int]string{}
	for _, in := range inputs {
		s := in.Run.Shard
		switch {
		case s == nil && report.Count > 0, s != nil && report.Count == 0 && len(seen) > 0:
			return report, fmt.Errorf("%s mixes whole runs and shards: merge the shards of one run", in.Source)
		case s == nil:
			seen[-1-len(seen)] = in.Source
			continue
		case report.Count != 0 && s.Count != report.Count:
			return report, fmt.Errorf("%s is shard %d/%d, but the inputs before it are shards of %d", in.Source, s.Index, s.Count, report.Count)
		}
		report.Count = s.Count
		if other, ok := seen[s.Index]; ok {
			return report, fmt.Errorf("shard %d/%d is both %s and %s", s.Index, s.Count, other, in.Source)
		}
		seen[s.Index] = in.Source
	}
	for i := 0; i < report.Count; i++ {
		if _, ok := seen[i]; !ok {
			report.Missing = append(report.Missing, i)
		}
	}
	return report, nil
}

// Combine unions the inputs' backends, cases and rows, with no checks of
// where they came from: cases in the order the inputs agree on (each holds
// its cases in suite order), rows by case, then backend, then as they ran.
// A case with two input hashes, or a row present twice with different
// values, is refused; a row present twice with equal values is kept once
// and counted.
func Combine(inputs []Input, command string) (*results.Run, int, error) {
	first := inputs[0].Run
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		Tool:          first.Tool,
		StartedAt:     first.StartedAt,
		Status:        results.RunComplete,
		Command:       command,
		Environment:   first.Environment,
		Suite:         first.Suite,
		Backends:      []results.Backend{},
		Cases:         []results.Case{},
		Results:       []results.Result{},
	}
	run.Environment.GPUs = nil
	cases, err := mergeCases(inputs)
	if err != nil {
		return nil, 0, err
	}
	run.Cases = cases
	rows, dups, err := mergeRows(inputs)
	if err != nil {
		return nil, 0, err
	}
	for _, in := range inputs {
		addPart(run, in)
	}
	run.Results = orderRows(rows, run.Cases, run.Backends)
	return run, dups, nil
}

// addPart folds one input's run-level records into run.
func addPart(run *results.Run, in Input) {
	r := in.Run
	if r.StartedAt.Before(run.StartedAt) {
		run.StartedAt = r.StartedAt
	}
	run.FinishedAt = later(run.FinishedAt, r.FinishedAt)
	if r.Status != results.RunComplete {
		run.Status = results.RunIncomplete
	}
	for _, b := range r.Backends {
		i := slices.IndexFunc(run.Backends, func(x results.Backend) bool { return x.Name == b.Name })
		switch {
		case i < 0:
			run.Backends = append(run.Backends, b)
		case b.Fault && !run.Backends[i].Fault:
			// A plugin that faulted in one part fails the whole run.
			b.UnavailableReason = in.Source + ": " + b.UnavailableReason
			run.Backends[i] = b
		case !run.Backends[i].Available && !run.Backends[i].Fault && b.Available:
			run.Backends[i] = b
		}
	}
	for _, g := range r.Environment.GPUs {
		if !slices.ContainsFunc(run.Environment.GPUs, func(x sdk.Device) bool { return x.Name == g.Name }) {
			run.Environment.GPUs = append(run.Environment.GPUs, g)
		}
	}
	run.Parts = append(run.Parts, results.Part{Source: in.Source, Shard: r.Shard, Host: r.Environment.Host,
		Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Rows: len(r.Results)})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeCases unions the cases by ID, refusing one case with two input
// hashes, in an order consistent with every input's.
func mergeCases(inputs []Input) ([]results.Case, error) {
	byID := map[string]results.Case{}
	from := map[string]string{}
	var orders [][]string
	for _, in := range inputs {
		var order []string
		for _, c := range in.Run.Cases {
			if prev, ok := byID[c.ID]; ok && prev.InputSHA256 != c.InputSHA256 && prev.InputSHA256 != "" && c.InputSHA256 != "" {
				return nil, fmt.Errorf("case %s has input hash %s in %s but %s in %s", c.ID, prev.InputSHA256, from[c.ID], c.InputSHA256, in.Source)
			}
			if prev, ok := byID[c.ID]; !ok || prev.InputSHA256 == "" {
				byID[c.ID], from[c.ID] = c, in.Source
			}
			order = append(order, c.ID)
		}
		orders = append(orders, order)
	}
	var cases []results.Case
	for _, id := range mergeOrders(orders) {
		cases = append(cases, byID[id])
	}
	return cases, nil
}

// mergeOrders merges sequences that are each in one common order (a
// suite's) into one sequence in that order: a topological sort of "comes
// before" taken from neighbours, earliest-seen first on a tie.
func mergeOrders(orders [][]string) []string {
	seen := map[string]int{}
	var ids []string
	after := map[string][]string{}
	indegree := map[string]int{}
	for _, order := range orders {
		for i, id := range order {
			if _, ok := seen[id]; !ok {
				seen[id] = len(ids)
				ids = append(ids, id)
			}
			if i > 0 {
				after[order[i-1]] = append(after[order[i-1]], id)
				indegree[id]++
			}
		}
	}
	var out []string
	done := map[string]bool{}
	for len(out) < len(ids) {
		next := ""
		for _, id := range ids {
			if !done[id] && indegree[id] == 0 {
				next = id
				break
			}
		}
		if next == "" { // inputs that disagree on the order: keep first-seen order
			for _, id := range ids {
				if !done[id] {
					next = id
					break
				}
			}
		}
		done[next] = true
		out = append(out, next)
		for _, id := range after[next] {
			indegree[id]--
		}
	}
	return out
}

type sourcedRow struct {
	row    results.Result
	source string
	order  int
}

func rowKey(r results.Result) string { return r.CaseID + "\x00" + r.Backend + "\x00" + r.Label }

// mergeRows collects every input's rows, refusing a row present twice
// with different values.
func mergeRows(inputs []Input) ([]sourcedRow, int, error) {
	byKey := map[string]int{}
	var rows []sourcedRow
	dups := 0
	for _, in := range inputs {
		for _, r := range in.Run.Results {
			k := rowKey(r)
			i, ok := byKey[k]
			if !ok {
				byKey[k] = len(rows)
				rows = append(rows, sourcedRow{row: r, source: in.Source, order: len(rows)})
				continue
			}
			if !sameRow(rows[i].row, r) {
				return nil, 0, fmt.Errorf("row %s / %s (%s) is in %s and in %s with different values (%s against %s); merge one of them",
					r.CaseID, r.Label, r.Backend, rows[i].source, in.Source, describeRow(rows[i].row), describeRow(r))
			}
			dups++
		}
	}
	return rows, dups, nil
}

func sameRow(a, b results.Result) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func describeRow(r results.Result) string {
	if t, ok := r.Primary(); ok {
		return fmt.Sprintf("%s, kernel median %.0f ns", r.Status, t.Kernel.MedianNs)
	}
	return string(r.Status)
}

// orderRows sorts rows by case, then backend, then the order they ran in.
func orderRows(rows []sourcedRow, cases []results.Case, backends []results.Backend) []results.Result {
	caseAt := map[string]int{}
	for i, c := range cases {
		caseAt[c.ID] = i
	}
	backendAt := map[string]int{}
	for i, b := range backends {
		backendAt[b.Name] = i
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ca, cb := caseAt[a.row.CaseID], caseAt[b.row.CaseID]; ca != cb {
			return ca < cb
		}
		if ba, bb := backendAt[a.row.Backend], backendAt[b.row.Backend]; ba != bb {
			return ba < bb
		}
		return a.order < b.order
	})
	out := make([]results.Result, len(rows))
	for i, r := range rows {
		out[i] = r.row
	}
	return out
}
