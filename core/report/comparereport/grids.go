package comparereport

import (
	"fmt"
	"strings"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
)

// pairGrid is the regression table: one line per row, old against new.
func pairGrid(c *compare.Comparison, s style) table.Grid {
	var g table.Grid
	g.Column("Case", table.Left)
	g.Column("Row", table.Left)
	g.Column("Old", table.Right)
	g.Column("New", table.Right)
	g.Column("Ratio", table.Right)
	g.Column("95% CI", table.Right)
	g.Column("Verdict", table.Left)
	for i, r := range c.Rows {
		ch := r.Changes[0]
		g.Rows = append(g.Rows, []string{caseCell(c.Rows, i), r.Name, measureCell(r.Measures[0]),
			measureCell(r.Measures[1]), cell.Ratio(ch.Ratio), intervalCell(ch), loudVerdict(ch, s)})
	}
	return g
}

// ablationGrid is one column per run: the first run's times, then each
// later run's time with its ratio and verdict against the first.
func ablationGrid(c *compare.Comparison, s style) table.Grid {
	var g table.Grid
	g.Column("Case", table.Left)
	g.Column("Row", table.Left)
	for _, r := range c.Runs {
		g.Column(r.Label, table.Right)
	}
	for i, r := range c.Rows {
		cells := []string{caseCell(c.Rows, i), r.Name, measureCell(r.Measures[0])}
		for run, ch := range r.Changes {
			cells = append(cells, ablationCell(r.Measures[run+1], ch, s))
		}
		g.Rows = append(g.Rows, cells)
	}
	return g
}

// caseCell names the case on the first row of each case only, so that the
// rows of one case read as a block.
func caseCell(rows []compare.Row, i int) string {
	if i > 0 && rows[i-1].CaseID == rows[i].CaseID {
		return ""
	}
	return rows[i].CaseID
}

// ablationCell is a later run's measure followed by what changed against
// the first run: "9.88 µs ±0.4% · 0.80× faster", "FAIL · REGRESSION".
func ablationCell(m compare.Measure, ch compare.Change, s style) string {
	measured := measureCell(m)
	switch ch.Verdict {
	case compare.Faster, compare.Slower, compare.Same, compare.Unsure:
		return measured + " · " + cell.Ratio(ch.Ratio) + " (" + intervalCell(ch) + ") " + changeCell(ch)
	case compare.Regression, compare.Fixed:
		return measured + " · " + s.loud(string(ch.Verdict))
	case compare.Added, compare.Removed:
		return measured + " · " + string(ch.Verdict)
	}
	return measured
}

// loudVerdict is the verdict cell, with REGRESSION and FIXED marked.
func loudVerdict(ch compare.Change, s style) string {
	cell := changeCell(ch)
	if ch.Verdict == compare.Regression || ch.Verdict == compare.Fixed {
		return s.loud(string(ch.Verdict)) + strings.TrimPrefix(cell, string(ch.Verdict))
	}
	return cell
}

// correctnessGrid lists every REGRESSION and FIXED row with the reason of
// the side that failed, apart from the times, so that none is missed.
func correctnessGrid(c *compare.Comparison, s style) table.Grid {
	var g table.Grid
	g.Column("Case", table.Left)
	g.Column("Row", table.Left)
	if !c.Pair() {
		g.Column("Run", table.Left)
	}
	g.Column("Change", table.Left)
	g.Column("Reason", table.Left)
	for _, r := range c.Rows {
		for i, ch := range r.Changes {
			if ch.Verdict != compare.Regression && ch.Verdict != compare.Fixed {
				continue
			}
			cells := []string{r.CaseID, r.Name}
			if !c.Pair() {
				cells = append(cells, c.Runs[i+1].Label)
			}
			g.Rows = append(g.Rows, append(cells, loudVerdict(ch, s), failureReason(r, i+1, ch)))
		}
	}
	return g
}

// failureReason is the reason of the failed side: the later run's for a
// REGRESSION, the first run's for FIXED.
func failureReason(r compare.Row, run int, ch compare.Change) string {
	failed := r.Measures[run]
	if ch.Verdict == compare.Fixed {
		failed = r.Measures[0]
	}
	reason := cell.OneLine(failed.Result.Reason)
	if reason == "" {
		return cell.Missing
	}
	return cell.Truncate(reason, comparisonReasonRunes)
}

// summaryGrid is one line per row name (and later run, in an ablation):
// the geometric mean of its ratios and its verdicts, with the totals.
func comparisonSummaryGrid(c *compare.Comparison) table.Grid {
	var g table.Grid
	g.Column("Row", table.Left)
	if !c.Pair() {
		g.Column("Run", table.Left)
	}
	g.Column("Geomean", table.Right)
	for _, title := range []string{"Faster", "Slower", "Same", "Unsure", "Regressions", "Fixed", "Added", "Removed", "Not compared"} {
		g.Column(title, table.Right)
	}
	for _, s := range c.Summary {
		cells := []string{s.Name}
		if !c.Pair() {
			cells = append(cells, c.Runs[s.Run].Label)
		}
		g.Rows = append(g.Rows, append(append(cells, cell.Ratio(s.Geomean())), changeCounts(s.Counts)...))
	}
	g.Footer = []string{"Total", ""}
	if !c.Pair() {
		g.Footer = append(g.Footer, "")
	}
	g.Footer = append(g.Footer, changeCounts(c.Total())...)
	return g
}

func changeCounts(c compare.Counts) []string {
	var cells []string
	for _, n := range []int{c.Faster, c.Slower, c.Same, c.Unsure, c.Regressions, c.Fixed, c.Added, c.Removed, c.NotCompared} {
		cells = append(cells, fmt.Sprint(n))
	}
	return cells
}
