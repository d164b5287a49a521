package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// view is the run arranged for the tables, the same for every text format.
type view struct {
	run *results.Run
	// crossChecked is true when some row carries an independent kernel
	// time (e.g. CUPTI) in the primary mode; the tables then show it.
	crossChecked bool
	// primary is the L2 mode of the Kernel column and of the speedups;
	// extra are the other modes some row was timed in.
	primary  sdk.L2Mode
	extra    []sdk.L2Mode
	baseline baseline
	cases    []caseBlock
	summary  []summaryRow
	// gpus are the GPUs the rows ran on, by index, when the run was spread
	// over more than one (flashcore run --devices); the tables then say
	// which GPU each row came from.
	gpus []results.RowDevice
}

// baseline is the backend speedups are taken against.
type baseline struct {
	requested string // what the options or the suite asked for
	backend   string // what is used; "" when no backend passed any case
	note      string // why backend differs from requested; "" when it does not
}

// caseBlock is one case and its rows, in results order.
type caseBlock struct {
	id    string
	info  *results.Case // nil when the run does not list the case
	rows  []row
	notes []string
}

type row struct {
	*results.Result
	// name is the row's name in the tables: its label, prefixed with the
	// backend when another backend has a row with the same label.
	name string
	// speedup is the baseline's kernel median over this row's; NaN when
	// either is cell.Missing or did not pass.
	speedup float64
	// isBaseline marks the row the case's speedups are taken against.
	isBaseline bool
}

// summaryRow is one row label across all cases.
type summaryRow struct {
	label    string
	speedups []float64 // one per case where both it and the baseline passed
	counts   counts
}

// counts are verdicts by kind.
type counts struct{ pass, fail, skip, errored int }

func (c *counts) add(s results.Status) {
	switch s {
	case results.StatusPass:
		c.pass++
	case results.StatusFail:
		c.fail++
	case results.StatusSkip:
		c.skip++
	default:
		c.errored++
	}
}

func buildView(run *results.Run, requestedBaseline string) *view {
	v := &view{run: run, primary: run.PrimaryMode()}
	v.extra = extraModes(run, v.primary)
	v.crossChecked = anyCrossCheck(run, v.primary)
	v.gpus = rowGPUs(run)
	if requestedBaseline == "" {
		requestedBaseline = run.Suite.Baseline
	}
	v.baseline = chooseBaseline(run.Results, requestedBaseline, v.primary)
	v.cases = groupByCase(run)
	namer := results.NewRowNamer(run)
	for _, c := range v.cases {
		for i := range c.rows {
			c.rows[i].name = namer.Name(c.rows[i].Result)
		}
	}
	for i := range v.cases {
		v.cases[i].compare(v.baseline.backend, v.primary)
	}
	v.summary = summarize(v.cases)
	return v
}

// extraModes are the modes other than primary that some row was timed in,
// in the suite's order, then in order of appearance.
func extraModes(run *results.Run, primary sdk.L2Mode) []sdk.L2Mode {
	var timed []sdk.L2Mode
	for _, r := range run.Results {
		for _, t := range r.Timings {
			if t.L2 != primary && !slices.Contains(timed, t.L2) {
				timed = append(timed, t.L2)
			}
		}
	}
	var extra []sdk.L2Mode
	for _, m := range run.Suite.L2Modes {
		if slices.Contains(timed, m) && !slices.Contains(extra, m) {
			extra = append(extra, m)
		}
	}
	for _, m := range timed {
		if !slices.Contains(extra, m) {
			extra = append(extra, m)
		}
	}
	return extra
}

// kernelMedian is r's kernel median in mode, when there is a usable one.
func kernelMedian(r *results.Result, mode sdk.L2Mode) (float64, bool) {
	t, ok := r.TimingFor(mode)
	if !ok || !(t.Kernel.MedianNs > 0) || math.IsInf(t.Kernel.MedianNs, 0) {
		return 0, false
	}
	return t.Kernel.MedianNs, true
}

// comparable says whether r can take part in a speedup: it passed and has
// a kernel time in mode.
func comparable(r *results.Result, mode sdk.L2Mode) bool {
	_, ok := kernelMedian(r, mode)
	return ok && r.Status == results.StatusPass
}

// chooseBaseline keeps the requested backend when it passed at least one
// case, and otherwise falls back to the first backend, in results order,
// that did, with a note that says so.
func chooseBaseline(rows []results.Result, requested string, mode sdk.L2Mode) baseline {
	present, passed := false, false
	fallback := ""
	for i := range rows {
		r := &rows[i]
		ok := comparable(r, mode)
		if r.Backend == requested {
			present = true
			passed = passed || ok
		}
		if ok && fallback == "" {
			fallback = r.Backend
		}
	}
	if passed {
		return baseline{requested: requested, backend: requested}
	}
	why := fmt.Sprintf("baseline %s not in this run", requested)
	switch {
	case requested == "":
		why = "no baseline set"
	case present:
		why = fmt.Sprintf("baseline %s passed no case", requested)
	}
	if fallback == "" {
		return baseline{requested: requested, note: why + "; no backend passed a case, so there are no speedups"}
	}
	return baseline{requested: requested, backend: fallback, note: why + "; speedups are against " + fallback}
}

// groupByCase lists the run's cases in order, each with its rows, then any
// case the results name that the run does not list.
func groupByCase(run *results.Run) []caseBlock {
	var blocks []caseBlock
	index := map[string]int{}
	for i := range run.Cases {
		c := &run.Cases[i]
		if _, dup := index[c.ID]; !dup {
			index[c.ID] = len(blocks)
			blocks = append(blocks, caseBlock{id: c.ID, info: c})
		}
	}
	for i := range run.Results {
		r := &run.Results[i]
		at, ok := index[r.CaseID]
		if !ok {
			at = len(blocks)
			index[r.CaseID] = at
			blocks = append(blocks, caseBlock{id: r.CaseID})
		}
		blocks[at].rows = append(blocks[at].rows, row{Result: r, speedup: math.NaN()})
	}
	return blocks
}

// compare sets the speedup of every row against the case's baseline row,
// and notes when the case has none.
// A row that ran on another GPU model than the baseline row gets no
// speedup: a ratio across models says more about the GPUs than the kernels.
// Rows that name no GPU (CPU backends, runs without --devices) keep theirs.
func (b *caseBlock) compare(baselineBackend string, mode sdk.L2Mode) {
	if base := b.baselineRow(baselineBackend, mode); base != nil {
		base.isBaseline = true
		baseNs, _ := kernelMedian(base.Result, mode)
		var otherModel []string
		for i := range b.rows {
			r := b.rows[i].Result
			ns, ok := kernelMedian(r, mode)
			switch {
			case !ok || !comparable(r, mode):
			case r.Model() != "" && base.Model() != "" && r.Model() != base.Model():
				otherModel = append(otherModel, r.RowLabel()+" on "+r.Model())
			default:
				b.rows[i].speedup = baseNs / ns
			}
		}
		if len(otherModel) > 0 {
			b.notes = append(b.notes, fmt.Sprintf("no speedup for rows on another GPU model than the baseline's (%s): %s",
				base.Model(), strings.Join(otherModel, ", ")))
		}
	} else if baselineBackend != "" && len(b.rows) > 0 {
		b.notes = append(b.notes, fmt.Sprintf("no speedups in this case: baseline %s has no passing row", baselineBackend))
	}
	b.notes = append(b.notes, warnings(b.rows)...)
}

// baselineRow is the baseline backend's first passing row in the case
// (e.g. its "sdpa" variant, or "sdpa-flash" when "sdpa" failed); nil when
// it has none.
func (b *caseBlock) baselineRow(baselineBackend string, mode sdk.L2Mode) *row {
	for i := range b.rows {
		if b.rows[i].Backend == baselineBackend && comparable(b.rows[i].Result, mode) {
			return &b.rows[i]
		}
	}
	return nil
}

// warnings are the rows' warning diagnostics, which the contract says are
// shown with the row, and the timings taken while the clock fell.
func warnings(rows []row) []string {
	var notes []string
	for _, r := range rows {
		for _, d := range r.Diagnostics {
			if d.Severity != sdk.Warning {
				continue
			}
			note := fmt.Sprintf("warning, %s: %s", r.name, d.Summary)
			if d.Detail != "" {
				note += ": " + d.Detail
			}
			notes = append(notes, note)
		}
		for _, t := range r.Timings {
			if t.Throttled {
				notes = append(notes, fmt.Sprintf("throttled, %s (L2 %s): %s; its times may read slow", r.name, t.L2, t.ThrottleNote))
			}
		}
	}
	return notes
}

// summarize gathers each row label's verdicts and speedups across cases,
// labels in order of first appearance.
func summarize(cases []caseBlock) []summaryRow {
	var summary []summaryRow
	index := map[string]int{}
	for _, c := range cases {
		for _, r := range c.rows {
			key := r.Backend + "\x00" + r.name
			at, ok := index[key]
			if !ok {
				at = len(summary)
				index[key] = at
				summary = append(summary, summaryRow{label: r.name})
			}
			summary[at].counts.add(r.Status)
			if !math.IsNaN(r.speedup) {
				summary[at].speedups = append(summary[at].speedups, r.speedup)
			}
		}
	}
	return summary
}

// total adds up the verdicts of every row.
func total(summary []summaryRow) counts {
	var t counts
	for _, s := range summary {
		t.pass += s.counts.pass
		t.fail += s.counts.fail
		t.skip += s.counts.skip
		t.errored += s.counts.errored
	}
	return t
}

// anyCrossCheck reports whether some row has a cross-check in mode.
func anyCrossCheck(run *results.Run, mode sdk.L2Mode) bool {
	for i := range run.Results {
		if t, ok := run.Results[i].TimingFor(mode); ok && t.CrossCheck != nil {
			return true
		}
	}
	return false
}

// rowGPUs lists the GPUs the rows ran on, by index; nil unless there are
// at least two.
func rowGPUs(run *results.Run) []results.RowDevice {
	var gpus []results.RowDevice
	for _, r := range run.Results {
		if r.Device != nil && !slices.ContainsFunc(gpus, func(g results.RowDevice) bool { return g.UUID == r.Device.UUID }) {
			gpus = append(gpus, *r.Device)
		}
	}
	if len(gpus) < 2 {
		return nil
	}
	slices.SortFunc(gpus, func(a, b results.RowDevice) int { return a.Index - b.Index })
	return gpus
}
