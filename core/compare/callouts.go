package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
)

// ClockThreshold is the relative difference of SM clocks between two
// runs of a row beyond which the comparison calls it out. A kernel bound
// by its arithmetic slows in proportion to its clock, so 2% of clock can
// move a time by 2%: under the default threshold of 5%, but enough to
// push a real change of 4% past it. Two readings of one card taken by
// different readers differ by under 1% (1980 against 1995 MHz on the
// H100), which stays below it.
const ClockThreshold = 0.02

// driverOf names a run's driver and CUDA version, else those its GPUs
// reported; "unknown" when it recorded none.
func driverOf(run *results.Run) string {
	var parts []string
	if d := run.Environment.Driver; d != "" {
		parts = append(parts, "driver "+d)
	}
	if v := run.Environment.CUDA; v != "" {
		parts = append(parts, "CUDA "+v)
	}
	if len(parts) == 0 {
		for _, g := range run.Environment.GPUs {
			if g.Driver != "" && !slices.Contains(parts, "driver "+g.Driver) {
				parts = append(parts, "driver "+g.Driver)
			}
		}
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// sampleWarnings name the runs that kept no raw samples (written before
// schema version 2): their rows are judged by the summary rule.
func sampleWarnings(runs []RunInfo) []string {
	var without []string
	for _, r := range runs {
		if !HasSamples(r.Run) {
			without = append(without, fmt.Sprintf("%s (results schema version %d)", r.Label, r.Run.SchemaVersion))
		}
	}
	if len(without) == 0 {
		return nil
	}
	return []string{"no raw samples in " + strings.Join(without, ", ") + "; rows without samples are judged by the fallback rule, " +
		"from medians and noise, not by the rank test"}
}

// HasSamples reports whether some row of run kept its raw kernel samples.
func HasSamples(run *results.Run) bool {
	for _, r := range run.Results {
		for _, t := range r.Timings {
			if t.Samples != nil && len(t.Samples.KernelNs) > 0 {
				return true
			}
		}
	}
	return false
}

// clockDiffers reports whether two recorded SM clocks are both known and
// apart by more than ClockThreshold.
func clockDiffers(before, after float64) bool {
	return before > 0 && after > 0 && math.Abs(after/before-1) > ClockThreshold
}

// clockWarnings count the rows whose SM clock differs between runs, so
// that the header says so before any ratio is read; clockNotes name them.
func clockWarnings(c *Comparison) []string {
	rows := 0
	for _, r := range c.Rows {
		for i := range r.Changes {
			if clockDiffers(r.Measures[0].SMClockMHz, r.Measures[i+1].SMClockMHz) {
				rows++
				break
			}
		}
	}
	if rows == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the SM clock differs by more than %s between runs in %d %s (named under the table); a kernel's time follows its clock",
		cell.Percent(ClockThreshold), rows, plural(rows, "row"))}
}

// clockNotes name every row whose SM clock differs by more than
// ClockThreshold between the first run and a later one, and every row
// whose clock fell during sampling.
func clockNotes(c *Comparison) []string {
	var notes []string
	for _, r := range c.Rows {
		first := r.Measures[0]
		for i := range r.Changes {
			later := r.Measures[i+1]
			if clockDiffers(first.SMClockMHz, later.SMClockMHz) {
				notes = append(notes, fmt.Sprintf("SM clock of %s in case %s: %s MHz in %s, %s MHz in %s (%+.1f%%)",
					r.Name, r.CaseID, cell.Sig3(first.SMClockMHz), c.Runs[0].Label, cell.Sig3(later.SMClockMHz), c.Runs[i+1].Label,
					100*(later.SMClockMHz/first.SMClockMHz-1)))
			}
		}
		for run, m := range r.Measures {
			if m.ThrottleNote != "" {
				notes = append(notes, fmt.Sprintf("%s in case %s was throttled while sampling in %s: %s", r.Name, r.CaseID, c.Runs[run].Label, m.ThrottleNote))
			}
		}
	}
	return notes
}

// codeDifferences name what changed in the code measured: each backend
// whose version or build differs between runs, then each identity fact
// that differs between matched rows, grouped by backend, fact and values
// with the number of rows.
func codeDifferences(c *Comparison) []string {
	return append(backendDifferences(c.Runs), factDifferences(c)...)
}

func backendDifferences(runs []RunInfo) []string {
	var names []string
	for _, r := range runs {
		for _, b := range r.Run.Backends {
			if !slices.Contains(names, b.Name) {
				names = append(names, b.Name)
			}
		}
	}
	var out []string
	for _, name := range names {
		listing, differ := perRun(runs, func(run *results.Run) string { return backendBuild(run, name) })
		if differ {
			out = append(out, fmt.Sprintf("%s: %s", name, listing))
		}
	}
	return out
}

// backendBuild is a backend's version and build as a run recorded them;
// "absent" when the run did not have it.
func backendBuild(run *results.Run, name string) string {
	for _, b := range run.Backends {
		if b.Name == name {
			if b.Build == "" {
				return "version " + b.Version
			}
			return fmt.Sprintf("version %s, build %s", b.Version, b.Build)
		}
	}
	return "absent"
}

// factChange is one identity fact changing between the first run and a
// later one, for one backend.
type factChange struct {
	backend, fact, before, after string
	run                          int
}

func factDifferences(c *Comparison) []string {
	var order []factChange
	rows := map[factChange]int{}
	for _, r := range c.Rows {
		for i := range r.Changes {
			for _, ch := range rowFactChanges(r, i+1) {
				if rows[ch] == 0 {
					order = append(order, ch)
				}
				rows[ch]++
			}
		}
	}
	var out []string
	for _, ch := range order {
		against := ""
		if !c.Pair() {
			against = " in " + c.Runs[ch.run].Label
		}
		out = append(out, fmt.Sprintf("%s %s%s: %s → %s (%d %s)", ch.backend, ch.fact, against,
			factValue(ch.fact, ch.before), factValue(ch.fact, ch.after), rows[ch], plural(rows[ch], "row")))
	}
	return out
}

// rowFactChanges are the identity facts of a row that differ between the
// first run and run, where both runs have the row.
func rowFactChanges(r Row, run int) []factChange {
	before, after := r.Measures[0].Result, r.Measures[run].Result
	if before == nil || after == nil {
		return nil
	}
	var out []factChange
	for _, ch := range before.IdentityChanges(after) {
		out = append(out, factChange{backend: r.Backend, fact: ch.Fact, before: ch.Before, after: ch.After, run: run})
	}
	return out
}

// factValue writes a fact's value for the header, hashes shortened.
func factValue(fact, value string) string {
	if strings.HasSuffix(fact, "sha256") {
		return shortHash(value)
	}
	return value
}

// methodChanges groups the rows whose kernel times were taken by another
// method in a later run than in the first, by row name and the methods of
// every run ("" for a run without the row): CUDA events read 1 to 2.5 µs a
// call above CUPTI's device durations (docs/measurement.md), so such a
// ratio compares the methods as well as the kernels.
func methodChanges(c *Comparison) (groups map[string]int, order []string) {
	groups = map[string]int{}
	for _, r := range c.Rows {
		first := r.Measures[0].Method
		differs := false
		methods := make([]string, len(r.Measures))
		for i, m := range r.Measures {
			methods[i] = m.Method
			if i > 0 && first != "" && m.Method != "" && m.Method != first {
				differs = true
			}
		}
		if !differs {
			continue
		}
		var parts []string
		for i, m := range methods {
			if m != "" {
				parts = append(parts, m+" in "+c.Runs[i].Label)
			}
		}
		key := r.Name + ": kernel time by " + strings.Join(parts, ", ")
		if groups[key] == 0 {
			order = append(order, key)
		}
		groups[key]++
	}
	return groups, order
}

// methodWarnings count the rows timed by different methods in different
// runs; methodNotes name them, a line per backend and methods.
func methodWarnings(c *Comparison) []string {
	groups, _ := methodChanges(c)
	rows := 0
	for _, n := range groups {
		rows += n
	}
	if rows == 0 {
		return nil
	}
	return []string{fmt.Sprintf("kernel times were taken by different methods in %d %s (named under the table); "+
		"CUDA events read 1 to 2.5 µs a call above CUPTI's device time", rows, plural(rows, "row"))}
}

func methodNotes(c *Comparison) []string {
	groups, order := methodChanges(c)
	notes := make([]string, 0, len(order))
	for _, key := range order {
		notes = append(notes, fmt.Sprintf("%s (%d %s)", key, groups[key], plural(groups[key], "row")))
	}
	return notes
}
