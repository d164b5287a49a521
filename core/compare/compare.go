package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// Source is one results file to compare.
type Source struct {
	// Path is the file as the user named it; the header shows it.
	Path string
	Run  *results.Run
}

// Options control Compare.
type Options struct {
	// Threshold is the smallest relative change that counts, as a fraction
	// (0.05 is 5%). Zero leaves only the noise to decide.
	Threshold float64
	// CPUThreshold is the threshold of rows timed on a CPU (their
	// backend's device is a CPU in either run): a CPU's speed moves
	// between runs by more than the samples of one run can show
	// (DefaultCPUThreshold). Zero judges them by Threshold.
	CPUThreshold float64
	// Labels name the runs in the tables, one per source; nil means each
	// run's suite name, tool version and start date.
	Labels []string
}

// Comparison is the runs set side by side, ready to render.
type Comparison struct {
	Runs []RunInfo
	// Mode is the L2 mode whose kernel medians are compared: the first
	// run's primary mode.
	Mode      sdk.L2Mode
	Threshold float64
	// CPUThreshold is the threshold the rows timed on a CPU were judged
	// by (Options.CPUThreshold, or Threshold where that is zero).
	CPUThreshold float64
	// Rows are every row of any run, cases in order of first appearance
	// and rows within a case likewise.
	Rows []Row
	// Warnings say what makes the runs hard to compare; they head every
	// output.
	Warnings []string
	// Differences name what changed in the code measured: plugin versions
	// and builds, and the kernels rows report (their source hashes, the
	// kernel or configuration chosen). They explain changes rather than
	// warn, and follow the warnings.
	Differences []string
	// Notes qualify single rows (SM clocks that differ, throttling,
	// duplicate rows); they follow the table.
	Notes   []string
	Summary []SummaryRow
}

// RunInfo is one compared run.
type RunInfo struct {
	Source
	Label string
}

// Row is one (case, row name) across the runs.
type Row struct {
	CaseID string
	// Name is the row's label, prefixed with its backend ("backend/label")
	// when another backend has a row with the same label.
	Name    string
	Backend string
	// Measures has one entry per run, in run order.
	Measures []Measure
	// Changes has one entry per later run: Changes[i-1] sets run i against
	// the first run.
	Changes []Change
}

// Compare sets the runs side by side: every later run against the first.
func Compare(sources []Source, opts Options) (*Comparison, error) {
	if err := validate(sources, opts); err != nil {
		return nil, err
	}
	runs := make([]*results.Run, len(sources))
	for i, s := range sources {
		runs[i] = s.Run
	}
	c := &Comparison{Mode: runs[0].PrimaryMode(), Threshold: opts.Threshold, CPUThreshold: opts.CPUThreshold}
	if c.CPUThreshold == 0 {
		c.CPUThreshold = c.Threshold
	}
	labels := opts.Labels
	if labels == nil {
		labels = defaultLabels(sources)
	}
	for i, s := range sources {
		c.Runs = append(c.Runs, RunInfo{Source: s, Label: labels[i]})
	}
	var duplicates []string
	c.Rows, duplicates = matchRows(runs, labels, c.Mode)
	for i := range c.Rows {
		c.Rows[i].judge(c.thresholdOf(c.Rows[i]))
	}
	c.Warnings = headerWarnings(c)
	c.Differences = codeDifferences(c)
	c.Notes = append(append(clockNotes(c), methodNotes(c)...), duplicates...)
	c.Summary = summarize(c.Rows, len(runs))
	return c, nil
}

func validate(sources []Source, opts Options) error {
	if len(sources) < 2 {
		return errors.New("compare: need at least two results files")
	}
	for i, s := range sources {
		if s.Run == nil {
			return fmt.Errorf("compare: run %d (%s) is missing", i+1, s.Path)
		}
	}
	if !finite(opts.Threshold) || opts.Threshold < 0 || opts.Threshold >= 1 {
		return fmt.Errorf("compare: threshold %v: want a fraction from 0 up to 1, e.g. 0.05 for 5%%", opts.Threshold)
	}
	if !finite(opts.CPUThreshold) || opts.CPUThreshold < 0 || opts.CPUThreshold >= 1 {
		return fmt.Errorf("compare: CPU threshold %v: want a fraction from 0 up to 1, e.g. 0.35 for 35%%", opts.CPUThreshold)
	}
	return validateLabels(opts.Labels, len(sources))
}

func validateLabels(labels []string, runs int) error {
	if labels == nil {
		return nil
	}
	if len(labels) != runs {
		return fmt.Errorf("compare: %d %s for %d results files; give one per file", len(labels), plural(len(labels), "label"), runs)
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if l == "" {
			return errors.New("compare: empty label")
		}
		if seen[l] {
			return fmt.Errorf("compare: label %q given twice", l)
		}
		seen[l] = true
	}
	return nil
}

// measure reads r's kernel median, noise, raw samples and clock in mode.
func measure(r *results.Result, mode sdk.L2Mode) Measure {
	m := Measure{Result: r, KernelNs: math.NaN(), RelNoise: math.NaN()}
	t, ok := r.TimingFor(mode)
	if !ok {
		return m
	}
	if t.Kernel.N > 0 {
		m.KernelNs, m.RelNoise, m.N = t.Kernel.MedianNs, t.Kernel.RelNoise, t.Kernel.N
	}
	if t.Samples != nil {
		for _, ns := range t.Samples.KernelNs {
			m.Samples = append(m.Samples, float64(ns))
		}
		m.PlacementMedians = t.Samples.PlacementMedians()
	}
	m.SMClockMHz, m.Method = t.SMClockMHz, t.Method
	if t.Throttled {
		m.ThrottleNote = t.ThrottleNote
		if m.ThrottleNote == "" {
			m.ThrottleNote = "throttled"
		}
	}
	return m
}

// thresholdOf is the threshold r is judged by: CPUThreshold for a row
// timed on a CPU in any run, Threshold otherwise.
func (c *Comparison) thresholdOf(r Row) float64 {
	if r.OnCPU() {
		return c.CPUThreshold
	}
	return c.Threshold
}

// OnCPU reports whether some run timed r on a CPU.
func (r Row) OnCPU() bool {
	return slices.ContainsFunc(r.Measures, func(m Measure) bool { return m.OnCPU })
}

// HasCPURows reports whether some row was timed on a CPU.
func (c *Comparison) HasCPURows() bool {
	return slices.ContainsFunc(c.Rows, Row.OnCPU)
}

// judge sets every later run's measure against the first run's.
func (r *Row) judge(threshold float64) {
	r.Changes = make([]Change, len(r.Measures)-1)
	for i := 1; i < len(r.Measures); i++ {
		r.Changes[i-1] = judge(r.Measures[0], r.Measures[i], threshold)
		r.Changes[i-1].Threshold = threshold
	}
}

// Failed reports whether a later run has a REGRESSION or a slower row:
// what --fail-on-regression turns into a non-zero exit.
func (c *Comparison) Failed() bool {
	t := c.Total()
	return t.Regressions > 0 || t.Slower > 0
}

// Total adds up the verdicts of every row and later run.
func (c *Comparison) Total() Counts {
	var t Counts
	for _, s := range c.Summary {
		t.addAll(s.Counts)
	}
	return t
}

// Pair reports whether the comparison is old against new (two runs),
// rather than an ablation.
func (c *Comparison) Pair() bool { return len(c.Runs) == 2 }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
