package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// View is a run arranged for reading, the same for every report drawn of
// it: its rows grouped by case, each with its speedup over the baseline,
// and a summary per row name.
type View struct {
	Run *results.Run
	// CrossChecked is true when some row carries an independent kernel
	// time (e.g. CUPTI) in the primary mode; the tables then show it.
	CrossChecked bool
	// Primary is the L2 mode of the Kernel column and of the speedups;
	// Extra are the other modes some row was timed in.
	Primary  sdk.L2Mode
	Extra    []sdk.L2Mode
	Baseline Baseline
	Cases    []Case
	Summary  []SummaryRow
	// GPUs are the GPUs the rows ran on, by index, when the run was spread
	// over more than one (flashcore run --devices); the tables then say
	// which GPU each row came from.
	GPUs []results.RowDevice
}

// Baseline is the backend speedups are taken against.
type Baseline struct {
	Requested string // what the options or the suite asked for
	Backend   string // what is used; "" when no backend passed any case
	Note      string // why Backend differs from Requested; "" when it does not
}

// Case is one case and its rows, in results order.
type Case struct {
	ID    string
	Info  *results.Case // nil when the run does not list the case
	Rows  []Row
	Notes []string
}

// Row is one result as the reports show it.
type Row struct {
	*results.Result
	// Name is the row's name in the tables: its label, prefixed with the
	// backend when another backend has a row with the same label.
	Name string
	// Speedup is the baseline's kernel median over this row's; NaN when
	// either is missing or did not pass.
	Speedup float64
	// IsBaseline marks the row the case's speedups are taken against.
	IsBaseline bool
}

// SummaryRow is one row label across all cases.
type SummaryRow struct {
	Label    string
	Speedups []float64 // one per case where both it and the baseline passed
	Counts   Counts
}

// Counts are verdicts by kind.
type Counts struct{ Pass, Fail, Skip, Errored int }

func (c *Counts) add(s results.Status) {
	switch s {
	case results.StatusPass:
		c.Pass++
	case results.StatusFail:
		c.Fail++
	case results.StatusSkip:
		c.Skip++
	default:
		c.Errored++
	}
}

// NewView arranges run for the reports. requestedBaseline is the backend
// speedups are taken against; "" means the suite's (run.Suite.Baseline).
// When it passed no case, the first backend that did stands in, and
// Baseline.Note says so.
func NewView(run *results.Run, requestedBaseline string) *View {
	v := &View{Run: run, Primary: run.PrimaryMode()}
	v.Extra = extraModes(run, v.Primary)
	v.CrossChecked = anyCrossCheck(run, v.Primary)
	v.GPUs = rowGPUs(run)
	if requestedBaseline == "" {
		requestedBaseline = run.Suite.Baseline
	}
	v.Baseline = chooseBaseline(run.Results, requestedBaseline, v.Primary)
	v.Cases = groupByCase(run)
	namer := results.NewRowNamer(run)
	for _, c := range v.Cases {
		for i := range c.Rows {
			c.Rows[i].Name = namer.Name(c.Rows[i].Result)
		}
	}
	for i := range v.Cases {
		v.Cases[i].compare(v.Baseline.Backend, v.Primary)
	}
	v.Summary = summarize(v.Cases)
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

// Comparable says whether r can take part in a speedup: it passed, has a
// kernel time in mode, and is not host-bound (results.HostBound).
func Comparable(r *results.Result, mode sdk.L2Mode) bool {
	_, ok := kernelMedian(r, mode)
	return ok && r.Status == results.StatusPass && !r.HostBound()
}

// chooseBaseline keeps the requested backend when it passed at least one
// case, and otherwise falls back to the first backend, in results order,
// that did, with a note that says so.
func chooseBaseline(rows []results.Result, requested string, mode sdk.L2Mode) Baseline {
	present, passed := false, false
	fallback := ""
	for i := range rows {
		r := &rows[i]
		ok := Comparable(r, mode)
		if r.Backend == requested {
			present = true
			passed = passed || ok
		}
		if ok && fallback == "" {
			fallback = r.Backend
		}
	}
	if passed {
		return Baseline{Requested: requested, Backend: requested}
	}
	why := fmt.Sprintf("baseline %s not in this run", requested)
	switch {
	case requested == "":
		why = "no baseline set"
	case present:
		why = fmt.Sprintf("baseline %s passed no case", requested)
	}
	if fallback == "" {
		return Baseline{Requested: requested, Note: why + "; no backend passed a case, so there are no speedups"}
	}
	return Baseline{Requested: requested, Backend: fallback, Note: why + "; speedups are against " + fallback}
}

// groupByCase lists the run's cases in order, each with its rows, then any
// case the results name that the run does not list.
func groupByCase(run *results.Run) []Case {
	var blocks []Case
	index := map[string]int{}
	for i := range run.Cases {
		c := &run.Cases[i]
		if _, dup := index[c.ID]; !dup {
			index[c.ID] = len(blocks)
			blocks = append(blocks, Case{ID: c.ID, Info: c})
		}
	}
	for i := range run.Results {
		r := &run.Results[i]
		at, ok := index[r.CaseID]
		if !ok {
			at = len(blocks)
			index[r.CaseID] = at
			blocks = append(blocks, Case{ID: r.CaseID})
		}
		blocks[at].Rows = append(blocks[at].Rows, Row{Result: r, Speedup: math.NaN()})
	}
	return blocks
}

// compare sets the speedup of every row against the case's baseline row,
// and notes when the case has none.
// A row that ran on another GPU model than the baseline row gets no
// speedup: a ratio across models says more about the GPUs than the kernels.
// Rows that name no GPU (CPU backends, runs without --devices) keep theirs.
func (b *Case) compare(baselineBackend string, mode sdk.L2Mode) {
	if base := b.baselineRow(baselineBackend, mode); base != nil {
		base.IsBaseline = true
		baseNs, _ := kernelMedian(base.Result, mode)
		var otherModel []string
		for i := range b.Rows {
			r := b.Rows[i].Result
			ns, ok := kernelMedian(r, mode)
			switch {
			case !ok || !Comparable(r, mode):
			case r.Model() != "" && base.Model() != "" && r.Model() != base.Model():
				otherModel = append(otherModel, r.RowLabel()+" on "+r.Model())
			default:
				b.Rows[i].Speedup = baseNs / ns
			}
		}
		if len(otherModel) > 0 {
			b.Notes = append(b.Notes, fmt.Sprintf("no speedup for rows on another GPU model than the baseline's (%s): %s",
				base.Model(), strings.Join(otherModel, ", ")))
		}
	} else if baselineBackend != "" && len(b.Rows) > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("no speedups in this case: baseline %s has no passing row", baselineBackend))
	}
	b.Notes = append(b.Notes, warnings(b.Rows)...)
}

// baselineRow is the baseline backend's first passing row in the case
// (e.g. its "sdpa" variant, or "sdpa-flash" when "sdpa" failed); nil when
// it has none.
func (b *Case) baselineRow(baselineBackend string, mode sdk.L2Mode) *Row {
	for i := range b.Rows {
		if b.Rows[i].Backend == baselineBackend && Comparable(b.Rows[i].Result, mode) {
			return &b.Rows[i]
		}
	}
	return nil
}

// warnings are the rows' warning diagnostics, which the contract says are
// shown with the row, and the timings taken while the clock fell.
func warnings(rows []Row) []string {
	var notes []string
	for _, r := range rows {
		for _, d := range r.Diagnostics {
			if d.Severity != sdk.Warning {
				continue
			}
			note := fmt.Sprintf("warning, %s: %s", r.Name, d.Summary)
			if d.Detail != "" {
				note += ": " + d.Detail
			}
			notes = append(notes, note)
		}
		for _, t := range r.Timings {
			if t.Throttled {
				notes = append(notes, fmt.Sprintf("throttled, %s (L2 %s): %s; its times may read slow", r.Name, t.L2, t.ThrottleNote))
			}
		}
		notes = append(notes, budgetNotes(r)...)
	}
	return notes
}

// budgetNotes say where a row's budget stopped its sampling before the
// noise target, and the ± it reached (flashcore run --budget).
func budgetNotes(r Row) []string {
	if r.Budget == nil {
		return nil
	}
	var notes []string
	for _, mode := range r.Budget.Hit {
		if t, ok := r.TimingFor(mode); ok {
			notes = append(notes, fmt.Sprintf("budget, %s (L2 %s): sampling stopped at the row's budget of %v, %d samples, %s reached",
				r.Name, mode, time.Duration(r.Budget.Ns).Round(time.Millisecond), t.Kernel.N, cell.Noise(t.Kernel.RelNoise)))
		}
	}
	return notes
}

// summarize gathers each row label's verdicts and speedups across cases,
// labels in order of first appearance.
func summarize(cases []Case) []SummaryRow {
	var summary []SummaryRow
	index := map[string]int{}
	for _, c := range cases {
		for _, r := range c.Rows {
			key := r.Backend + "\x00" + r.Name
			at, ok := index[key]
			if !ok {
				at = len(summary)
				index[key] = at
				summary = append(summary, SummaryRow{Label: r.Name})
			}
			summary[at].Counts.add(r.Status)
			if !math.IsNaN(r.Speedup) {
				summary[at].Speedups = append(summary[at].Speedups, r.Speedup)
			}
		}
	}
	return summary
}

// Total adds up the verdicts of every row.
func Total(summary []SummaryRow) Counts {
	var t Counts
	for _, s := range summary {
		t.Pass += s.Counts.Pass
		t.Fail += s.Counts.Fail
		t.Skip += s.Counts.Skip
		t.Errored += s.Counts.Errored
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
