package runreport

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// Where a run's time went (flashcore run --explain-time, flashcore report
// --explain-time; docs/measurement.md, "Where the time goes"):
//
//  1. the plugins' start, all at once before the first row: the longest;
//  2. each case's inputs, generated once and shared by its rows;
//  3. each step of every row (results.Phase), summed over the rows by
//     step and L2 mode, with the plugin's own split of its Run calls
//     beneath, labelled as its report;
//  4. what is left of the run's wall time: saving, the order of work.
//
// Then the slowest rows, each split the same way.

// SlowestRows is how many rows the time explanation lists by name.
const SlowestRows = 10

// WriteTimeExplanation writes where run's time went, as a terminal table
// or as Markdown.
func WriteTimeExplanation(w io.Writer, run *results.Run, markdown bool) error {
	var out bytes.Buffer
	heading := func(title string) {
		if markdown {
			fmt.Fprintf(&out, "\n### %s\n\n", title)
		} else {
			fmt.Fprintf(&out, "\n%s\n", title)
		}
	}
	heading("Where the time went")
	if !hasTimeBreakdown(run) {
		out.WriteString("(this results file has no time breakdown: it was written before flashcore recorded one)\n")
		_, err := w.Write(out.Bytes())
		return err
	}
	if err := table.Draw(&out, totalsGrid(run), markdown); err != nil {
		return err
	}
	heading(fmt.Sprintf("Slowest rows (of %d timed)", len(timedRows(run))))
	if err := table.Draw(&out, slowestGrid(run, SlowestRows), markdown); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

func hasTimeBreakdown(run *results.Run) bool {
	return slices.ContainsFunc(run.Results, func(r results.Result) bool { return len(r.Time) > 0 })
}

// timedRows are the rows that took samples, the ones worth naming.
func timedRows(run *results.Run) []*results.Result {
	var rows []*results.Result
	for i := range run.Results {
		if len(run.Results[i].Timings) > 0 {
			rows = append(rows, &run.Results[i])
		}
	}
	return rows
}

// total is one line of the totals: a step's time summed over the rows.
type total struct {
	step, by string
	ns       int64
	count    int
	indent   bool
}

func totalsGrid(run *results.Run) table.Grid {
	wall := run.FinishedAt.Sub(run.StartedAt).Nanoseconds()
	lines := append([]total{startTotal(run)}, pluginTimes(run, func(b results.Backend) int64 { return b.StartNs })...)
	lines = append(lines, inputsTotal(run))
	if full := fullReferenceTotal(run); full.count > 0 {
		lines = append(lines, full)
	}
	lines = append(lines, stepTotals(run)...)
	if run.PluginStopNs > 0 {
		lines = append(lines, total{step: "plugin stop (all at once)", by: "host", ns: run.PluginStopNs, count: 1})
		lines = append(lines, pluginTimes(run, func(b results.Backend) int64 { return b.StopNs })...)
	}
	accounted := int64(0)
	for _, l := range lines {
		if !l.indent {
			accounted += l.ns
		}
	}
	if wall > 0 {
		lines = append(lines, total{step: "outside the rows (saving, the report, the rest)", by: "host", ns: wall - accounted})
	}
	g := table.Grid{}
	g.Column("Step", table.Left)
	g.Column("Measured by", table.Left)
	g.Column("Total", table.Right)
	g.Column("Share", table.Right)
	g.Column("Times", table.Right)
	for _, l := range lines {
		step := l.step
		if l.indent {
			step = "· " + step // the renderer trims leading spaces
		}
		g.Rows = append(g.Rows, []string{step, l.by, seconds(l.ns), share(l.ns, wall), countCell(l.count)})
	}
	if wall > 0 {
		g.Footer = []string{"run wall time", "host", seconds(wall), "100%", ""}
	}
	return g
}

// startTotal is the plugins' start: they start at once, so the longest is
// what the run waited.
func startTotal(run *results.Run) total {
	t := total{step: "plugin start (all at once; the longest)", by: "host"}
	for _, b := range run.Backends {
		if b.StartNs > 0 {
			t.ns = max(t.ns, b.StartNs)
			t.count++
		}
	}
	return t
}

// pluginTimes are each plugin's start or stop (of), longest first, under
// the plugins' start or stop: which one the run waited for.
func pluginTimes(run *results.Run, of func(results.Backend) int64) []total {
	var lines []total
	for _, b := range run.Backends {
		if ns := of(b); ns > 0 {
			lines = append(lines, total{step: b.Name, by: "host", ns: ns, count: 1, indent: true})
		}
	}
	slices.SortStableFunc(lines, func(a, b total) int { return cmp.Compare(b.ns, a.ns) })
	return lines
}

func inputsTotal(run *results.Run) total {
	t := total{step: "case inputs (once per case)", by: "host"}
	for _, c := range run.Cases {
		if c.InputsNs > 0 {
			t.ns += c.InputsNs
			t.count++
		}
	}
	return t
}

// fullReferenceTotal is the harness's fp32 reference of every row, over
// the cases that had one (its process's start included).
func fullReferenceTotal(run *results.Run) total {
	t := total{step: "fp32 reference of every row (once per case)", by: "host"}
	for _, c := range run.Cases {
		if c.FullReference != nil && c.FullReference.Ns > 0 {
			t.ns += c.FullReference.Ns
			t.count++
		}
	}
	return t
}

// stepTotals sum every row's steps by step and L2 mode, in the order the
// steps first appear; a step's line is followed by its parts, summed the
// same way: a Run's as the plugin reported them, a recheck's as the host
// split it.
func stepTotals(run *results.Run) []total {
	var lines []total
	index := map[string]int{}
	parts := map[string][]total{}
	partIndex := map[string]map[string]int{}
	for _, r := range run.Results {
		for _, p := range r.Time {
			key := stepName(p)
			at, ok := index[key]
			if !ok {
				at = len(lines)
				index[key] = at
				lines = append(lines, total{step: key, by: "host"})
				partIndex[key] = map[string]int{}
			}
			lines[at].ns += p.Ns
			lines[at].count++
			addPart := func(name, by string, ns int64) {
				j, ok := partIndex[key][name]
				if !ok {
					j = len(parts[key])
					partIndex[key][name] = j
					parts[key] = append(parts[key], total{step: name, by: by, indent: true})
				}
				parts[key][j].ns += ns
				parts[key][j].count++
			}
			for _, q := range p.Plugin {
				addPart(pluginStepName(q.Name), "plugin's report", q.Ns)
			}
			for _, q := range p.Host {
				addPart(cmp.Or(hostPartNames[q.Name], q.Name), "host", q.Ns)
			}
		}
	}
	var out []total
	for _, l := range lines {
		ps := parts[l.step]
		slices.SortStableFunc(ps, func(a, b total) int { return cmp.Compare(pluginStepRank(a.step), pluginStepRank(b.step)) })
		out = append(append(out, l), ps...)
	}
	return out
}

// stepNames are the rows' steps as the tables name them.
var stepNames = map[string]string{
	results.PhaseStart:      "plugin restart",
	results.PhaseInputs:     "inputs written to the row's workspace",
	results.PhaseWalls:      "walls (freeze the others)",
	results.PhasePrepare:    "prepare",
	results.PhaseCheckedRun: "checked run (Fetch)",
	results.PhaseCheck:      "fp64 check of the checked run",
	results.PhaseRun:        "run",
	results.PhaseTimedCheck: "rules and check of the timed output",
	results.PhaseRecheck:    "recheck (host's clock, fresh inputs)",
	results.PhaseRelease:    "release",
	results.PhaseOther:      "other",
}

func stepName(p results.Phase) string {
	name := cmp.Or(stepNames[p.Name], p.Name)
	if p.L2 != "" {
		name += " (L2 " + string(p.L2) + ")"
	}
	return name
}

// hostPartNames name the parts of a step the host splits (the recheck's,
// results.Recheck*); they are listed in the order they ran.
var hostPartNames = map[string]string{
	results.RecheckInputs:   "fresh inputs generated and written",
	results.RecheckRelease:  "release before their prepare",
	results.RecheckPrepare:  "prepare on the fresh inputs",
	results.RecheckBatch:    "batch of N calls (batch rule)",
	results.RecheckMarginal: "batches of n and 2n calls (marginal rule)",
	results.RecheckCheck:    "fp64 check of the fresh output",
}

// pluginStepNames name the parts of a Run (sdk.Phase*); a sampling block
// is named with why it stopped.
var pluginStepNames = map[string]string{
	sdk.PhaseWarmup:                         "warm-up",
	sdk.PhaseSample + ":" + sdk.StopNoise:   "sampling, stopped at the noise target",
	sdk.PhaseSample + ":" + sdk.StopTimeCap: "sampling, stopped at the time cap",
	sdk.PhaseSample + ":" + sdk.StopMax:     "sampling, stopped at max_samples",
	sdk.PhaseMove:                           "moves between placements",
	sdk.PhaseCalls:                          "call samples",
	sdk.PhaseCrossCheck:                     "cross-check",
	sdk.PhaseOutput:                         "timed output written",
	sdk.PhaseOther:                          "rest of the call",
}

func pluginStepName(name string) string { return cmp.Or(pluginStepNames[name], name) }

// pluginStepOrder is the order a Run's parts are listed in: the order
// they run.
var pluginStepOrder = []string{sdk.PhaseWarmup, sdk.PhaseSample + ":" + sdk.StopNoise, sdk.PhaseSample + ":" + sdk.StopTimeCap,
	sdk.PhaseSample + ":" + sdk.StopMax, sdk.PhaseMove, sdk.PhaseCalls, sdk.PhaseCrossCheck, sdk.PhaseOutput, sdk.PhaseOther}

// pluginStepRank places a part named (as the tables name it) in
// pluginStepOrder; parts it does not know go last, in the order met.
func pluginStepRank(named string) int {
	for i, name := range pluginStepOrder {
		if pluginStepNames[name] == named {
			return i
		}
	}
	return len(pluginStepOrder)
}

// slowestGrid lists the n slowest timed rows and where their time went.
func slowestGrid(run *results.Run, n int) table.Grid {
	rows := timedRows(run)
	slices.SortStableFunc(rows, func(a, b *results.Result) int { return cmp.Compare(b.Duration, a.Duration) })
	g := table.Grid{}
	for _, c := range []struct {
		title string
		right bool
	}{{"Case", table.Left}, {"Row", table.Left}, {"Wall", table.Right}, {"Sampling", table.Right},
		{"Warm-up", table.Right}, {"Call samples", table.Right}, {"Checks", table.Right},
		{"Recheck", table.Right}, {"Rest", table.Right}, {"Stopped by", table.Left}} {
		g.Column(c.title, c.right)
	}
	for _, r := range rows[:min(n, len(rows))] {
		s := splitRow(r)
		g.Rows = append(g.Rows, []string{r.CaseID, r.Label, seconds(r.Duration.Nanoseconds()), seconds(s.sampling),
			seconds(s.warmup), seconds(s.calls), seconds(s.checks), seconds(s.recheck),
			seconds(r.Duration.Nanoseconds() - s.sampling - s.warmup - s.calls - s.checks - s.recheck), stoppedBy(r)})
	}
	return g
}

// rowSplit is one row's time in the slowest rows' columns.
type rowSplit struct{ sampling, warmup, calls, checks, recheck int64 }

func splitRow(r *results.Result) rowSplit {
	var s rowSplit
	for _, p := range r.Time {
		switch p.Name {
		case results.PhaseCheck, results.PhaseTimedCheck:
			s.checks += p.Ns
		case results.PhaseRecheck:
			s.recheck += p.Ns
		}
		for _, q := range p.Plugin {
			switch name, _, _ := strings.Cut(q.Name, ":"); name {
			case sdk.PhaseSample, sdk.PhaseMove:
				s.sampling += q.Ns
			case sdk.PhaseWarmup:
				s.warmup += q.Ns
			case sdk.PhaseCalls:
				s.calls += q.Ns
			}
		}
	}
	return s
}

// stoppedBy says why each sampling block of a row stopped, with counts:
// "time cap", "noise target ×4, time cap".
func stoppedBy(r *results.Result) string {
	var order []string
	counts := map[string]int{}
	for _, p := range r.Time {
		for _, q := range p.Plugin {
			name, stop, ok := strings.Cut(q.Name, ":")
			if !ok || name != sdk.PhaseSample {
				continue
			}
			if counts[stop] == 0 {
				order = append(order, stop)
			}
			counts[stop]++
		}
	}
	words := map[string]string{sdk.StopNoise: "noise target", sdk.StopTimeCap: "time cap", sdk.StopMax: "max_samples"}
	parts := make([]string, len(order))
	for i, stop := range order {
		parts[i] = cmp.Or(words[stop], stop)
		if counts[stop] > 1 {
			parts[i] += fmt.Sprintf(" ×%d", counts[stop])
		}
	}
	if len(parts) == 0 {
		return cell.Missing
	}
	return strings.Join(parts, ", ")
}

// seconds writes a time as seconds with two decimals: "1.27 s".
func seconds(ns int64) string {
	return fmt.Sprintf("%.2f s", time.Duration(ns).Seconds())
}

func share(ns, wall int64) string {
	if wall <= 0 {
		return cell.Missing
	}
	return fmt.Sprintf("%.1f%%", 100*float64(ns)/float64(wall))
}

func countCell(n int) string {
	if n == 0 {
		return cell.Missing
	}
	return fmt.Sprint(n)
}
