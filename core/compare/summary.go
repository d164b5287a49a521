package compare

import (
	"fmt"
	"strings"

	"github.com/flashcore/bench/core/stats"
)

// SummaryRow is one row name against one later run, across all cases.
type SummaryRow struct {
	Name string
	// Run is the index of the later run (1 for the second run).
	Run int
	// Ratios are the ratios of the cases where both rows passed and were
	// timed (the faster, slower, same and unsure verdicts).
	Ratios []float64
	Counts Counts
}

// Geomean is the geometric mean of the ratios, NaN when no case was
// compared. It is the mean for ratios: 0.5× and 2× average to 1×.
func (s SummaryRow) Geomean() float64 { return stats.GeoMean(s.Ratios) }

// Counts are verdicts by kind.
type Counts struct {
	Faster, Slower, Same, Unsure, Regressions, Fixed, Added, Removed, NotCompared int
}

func (c *Counts) add(v Verdict) {
	switch v {
	case Faster:
		c.Faster++
	case Slower:
		c.Slower++
	case Same:
		c.Same++
	case Unsure:
		c.Unsure++
	case Regression:
		c.Regressions++
	case Fixed:
		c.Fixed++
	case Added:
		c.Added++
	case Removed:
		c.Removed++
	case NotCompared:
		c.NotCompared++
	}
}

func (c *Counts) addAll(o Counts) {
	c.Faster += o.Faster
	c.Slower += o.Slower
	c.Same += o.Same
	c.Unsure += o.Unsure
	c.Regressions += o.Regressions
	c.Fixed += o.Fixed
	c.Added += o.Added
	c.Removed += o.Removed
	c.NotCompared += o.NotCompared
}

// summarize gathers, per row name and later run, the verdicts and the
// ratios across cases; names in order of first appearance, then runs in
// order.
func summarize(rows []Row, runs int) []SummaryRow {
	var names []string
	byName := map[string][]SummaryRow{}
	for _, r := range rows {
		if _, seen := byName[r.Name]; !seen {
			names = append(names, r.Name)
			byName[r.Name] = make([]SummaryRow, runs-1)
			for i := range byName[r.Name] {
				byName[r.Name][i] = SummaryRow{Name: r.Name, Run: i + 1}
			}
		}
		for i, ch := range r.Changes {
			s := &byName[r.Name][i]
			s.Counts.add(ch.Verdict)
			if finite(ch.Ratio) {
				s.Ratios = append(s.Ratios, ch.Ratio)
			}
		}
	}
	var summary []SummaryRow
	for _, n := range names {
		for _, s := range byName[n] {
			if s.Counts != (Counts{}) {
				summary = append(summary, s)
			}
		}
	}
	return summary
}

// SummaryLine is the comparison in one line, for release notes: "3
// faster, 1 slower, 12 same, 2 unsure, 1 correctness regression", then
// fixed, added, removed and not compared rows where there are any.
func (c *Comparison) SummaryLine() string {
	t := c.Total()
	parts := []string{
		fmt.Sprintf("%d faster", t.Faster), fmt.Sprintf("%d slower", t.Slower), fmt.Sprintf("%d same", t.Same),
		fmt.Sprintf("%d unsure", t.Unsure), fmt.Sprintf("%d correctness %s", t.Regressions, plural(t.Regressions, "regression")),
	}
	for _, extra := range []struct {
		n    int
		word string
	}{{t.Fixed, "fixed"}, {t.Added, "added"}, {t.Removed, "removed"}, {t.NotCompared, "not compared"}} {
		if extra.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", extra.n, extra.word))
		}
	}
	return strings.Join(parts, ", ")
}
