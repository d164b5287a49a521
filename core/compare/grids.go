package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// grid is one table before it is drawn: the same for table and markdown.
type grid struct {
	header []string
	align  []tw.Align
	rows   [][]string
	footer []string // nil for none
}

func (g *grid) column(title string, align tw.Align) {
	g.header = append(g.header, title)
	g.align = append(g.align, align)
}

// pairGrid is the regression table: one line per row, old against new.
func pairGrid(c *Comparison, s style) grid {
	var g grid
	g.column("Case", tw.AlignLeft)
	g.column("Row", tw.AlignLeft)
	g.column("Old", tw.AlignRight)
	g.column("New", tw.AlignRight)
	g.column("Ratio", tw.AlignRight)
	g.column("95% CI", tw.AlignRight)
	g.column("Verdict", tw.AlignLeft)
	for i, r := range c.Rows {
		ch := r.Changes[0]
		g.rows = append(g.rows, []string{caseCell(c.Rows, i), r.Name, measureCell(r.Measures[0]),
			measureCell(r.Measures[1]), ratioCell(ch.Ratio), intervalCell(ch), loudVerdict(ch, s)})
	}
	return g
}

// ablationGrid is one column per run: the first run's times, then each
// later run's time with its ratio and verdict against the first.
func ablationGrid(c *Comparison, s style) grid {
	var g grid
	g.column("Case", tw.AlignLeft)
	g.column("Row", tw.AlignLeft)
	for _, r := range c.Runs {
		g.column(r.Label, tw.AlignRight)
	}
	for i, r := range c.Rows {
		cells := []string{caseCell(c.Rows, i), r.Name, measureCell(r.Measures[0])}
		for run, ch := range r.Changes {
			cells = append(cells, ablationCell(r.Measures[run+1], ch, s))
		}
		g.rows = append(g.rows, cells)
	}
	return g
}

// caseCell names the case on the first row of each case only, so that the
// rows of one case read as a block.
func caseCell(rows []Row, i int) string {
	if i > 0 && rows[i-1].CaseID == rows[i].CaseID {
		return ""
	}
	return rows[i].CaseID
}

// ablationCell is a later run's measure followed by what changed against
// the first run: "9.88 µs ±0.4% · 0.80× faster", "FAIL · REGRESSION".
func ablationCell(m Measure, ch Change, s style) string {
	measured := measureCell(m)
	switch ch.Verdict {
	case Faster, Slower, Same, Unsure:
		return measured + " · " + ratioCell(ch.Ratio) + " (" + intervalCell(ch) + ") " + verdictCell(ch)
	case Regression, Fixed:
		return measured + " · " + s.loud(string(ch.Verdict))
	case Added, Removed:
		return measured + " · " + string(ch.Verdict)
	}
	return measured
}

// loudVerdict is the verdict cell, with REGRESSION and FIXED marked.
func loudVerdict(ch Change, s style) string {
	cell := verdictCell(ch)
	if ch.Verdict == Regression || ch.Verdict == Fixed {
		return s.loud(string(ch.Verdict)) + strings.TrimPrefix(cell, string(ch.Verdict))
	}
	return cell
}

// correctnessGrid lists every REGRESSION and FIXED row with the reason of
// the side that failed, apart from the times, so that none is missed.
func correctnessGrid(c *Comparison, s style) grid {
	var g grid
	g.column("Case", tw.AlignLeft)
	g.column("Row", tw.AlignLeft)
	if !c.pair() {
		g.column("Run", tw.AlignLeft)
	}
	g.column("Change", tw.AlignLeft)
	g.column("Reason", tw.AlignLeft)
	for _, r := range c.Rows {
		for i, ch := range r.Changes {
			if ch.Verdict != Regression && ch.Verdict != Fixed {
				continue
			}
			cells := []string{r.CaseID, r.Name}
			if !c.pair() {
				cells = append(cells, c.Runs[i+1].Label)
			}
			g.rows = append(g.rows, append(cells, loudVerdict(ch, s), failureReason(r, i+1, ch)))
		}
	}
	return g
}

// failureReason is the reason of the failed side: the later run's for a
// REGRESSION, the first run's for FIXED.
func failureReason(r Row, run int, ch Change) string {
	failed := r.Measures[run]
	if ch.Verdict == Fixed {
		failed = r.Measures[0]
	}
	reason := oneLine(failed.Result.Reason)
	if reason == "" {
		return missing
	}
	return truncate(reason, maxReasonRunes)
}

// summaryGrid is one line per row name (and later run, in an ablation):
// the geometric mean of its ratios and its verdicts, with the totals.
func summaryGrid(c *Comparison) grid {
	var g grid
	g.column("Row", tw.AlignLeft)
	if !c.pair() {
		g.column("Run", tw.AlignLeft)
	}
	g.column("Geomean", tw.AlignRight)
	for _, title := range []string{"Faster", "Slower", "Same", "Unsure", "Regressions", "Fixed", "Added", "Removed", "Not compared"} {
		g.column(title, tw.AlignRight)
	}
	for _, s := range c.Summary {
		cells := []string{s.Name}
		if !c.pair() {
			cells = append(cells, c.Runs[s.Run].Label)
		}
		g.rows = append(g.rows, append(append(cells, ratioCell(s.Geomean())), countCells(s.Counts)...))
	}
	g.footer = []string{"Total", ""}
	if !c.pair() {
		g.footer = append(g.footer, "")
	}
	g.footer = append(g.footer, countCells(c.Total())...)
	return g
}

func countCells(c Counts) []string {
	var cells []string
	for _, n := range []int{c.Faster, c.Slower, c.Same, c.Unsure, c.Regressions, c.Fixed, c.Added, c.Removed, c.NotCompared} {
		cells = append(cells, fmt.Sprint(n))
	}
	return cells
}

// drawGrid draws g with tablewriter: boxed for a terminal, or as a GitHub
// Markdown table.
func drawGrid(out io.Writer, g grid, markdown bool) error {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: g.align}),
		tablewriter.WithFooterAutoWrap(tw.WrapNone),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{PerColumn: g.align}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		g = escapeMarkdown(g)
	}
	table := tablewriter.NewTable(out, opts...)
	table.Header(anys(g.header)...)
	for _, r := range g.rows {
		if err := table.Append(anys(r)...); err != nil {
			return err
		}
	}
	if g.footer != nil {
		table.Footer(anys(g.footer)...)
	}
	return table.Render()
}

// escapeMarkdown keeps a "|" inside a cell from ending it.
func escapeMarkdown(g grid) grid {
	escape := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return out
	}
	e := grid{header: escape(g.header), align: g.align}
	for _, r := range g.rows {
		e.rows = append(e.rows, escape(r))
	}
	if g.footer != nil {
		e.footer = escape(g.footer)
	}
	return e
}

func anys(cells []string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = c
	}
	return out
}
