package comparereport

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
	"github.com/flashcore/bench/sdk"
)

// item is one line of the header block.
type item struct{ key, value string }

// style is what differs between the terminalStyle and Markdown.
type style struct {
	markdown bool
	// path quotes a file path.
	path func(string) string
	// loud marks the verdicts a reader must not miss.
	loud func(string) string
}

var (
	terminalStyle = style{path: func(p string) string { return p }, loud: func(s string) string { return s }}
	markdownStyle = style{markdown: true, path: func(p string) string { return "`" + p + "`" },
		loud: func(s string) string { return "**" + s + "**" }}
)

func writeComparisonTable(w io.Writer, c *compare.Comparison) error {
	var out bytes.Buffer
	out.WriteString("FlashCore bench comparison: " + c.SummaryLine() + "\n")
	for _, it := range comparisonHeaderItems(c, terminalStyle) {
		fmt.Fprintf(&out, "  %-9s %s\n", it.key, it.value)
	}
	for _, warning := range c.Warnings {
		fmt.Fprintf(&out, "  %-9s %s\n", "Warning", warning)
	}
	for _, d := range c.Differences {
		fmt.Fprintf(&out, "  %-9s %s\n", "Changed", d)
	}
	out.WriteString("\n")
	if err := writeComparisonBody(&out, c, terminalStyle, "  note: "); err != nil {
		return err
	}
	if changes := correctnessGrid(c, terminalStyle); len(changes.Rows) > 0 {
		out.WriteString("\nCorrectness changes\n")
		if err := table.Draw(&out, changes, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\nSummary  ·  %s\n", comparisonSummaryCaption)
	if err := table.Draw(&out, comparisonSummaryGrid(c), false); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

func writeComparisonMarkdown(w io.Writer, c *compare.Comparison) error {
	var out bytes.Buffer
	out.WriteString(c.SummaryLine() + "\n\n")
	out.WriteString("## FlashCore bench comparison\n\n")
	for _, it := range comparisonHeaderItems(c, markdownStyle) {
		fmt.Fprintf(&out, "- **%s:** %s\n", it.key, it.value)
	}
	for _, warning := range c.Warnings {
		fmt.Fprintf(&out, "\n> **Warning:** %s\n", warning)
	}
	if len(c.Differences) > 0 {
		out.WriteString("\n**Changed between the runs:**\n\n")
		for _, d := range c.Differences {
			fmt.Fprintf(&out, "- %s\n", d)
		}
	}
	out.WriteString("\n")
	if err := writeComparisonBody(&out, c, markdownStyle, "\n> Note: "); err != nil {
		return err
	}
	if changes := correctnessGrid(c, markdownStyle); len(changes.Rows) > 0 {
		out.WriteString("\n### Correctness changes\n\n")
		if err := table.Draw(&out, changes, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\n### Summary\n\n%s.\n\n", capitalize(comparisonSummaryCaption))
	if err := table.Draw(&out, comparisonSummaryGrid(c), true); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

// writeBody writes the table of every row and the notes that qualify it.
func writeComparisonBody(out *bytes.Buffer, c *compare.Comparison, s style, notePrefix string) error {
	if len(c.Rows) == 0 {
		out.WriteString("(no rows in any run)\n")
		return nil
	}
	g := ablationGrid(c, s)
	if c.Pair() {
		g = pairGrid(c, s)
	}
	if err := table.Draw(out, g, s.markdown); err != nil {
		return err
	}
	for _, n := range c.Notes {
		out.WriteString(notePrefix + n + "\n")
	}
	return nil
}

// headerItems are the lines of the header block: one per run, then how
// times and verdicts are read.
func comparisonHeaderItems(c *compare.Comparison, s style) []item {
	var items []item
	for i, r := range c.Runs {
		items = append(items, item{runKey(c, i), runLine(r, s)})
	}
	items = append(items, item{"Timing", comparisonTimingLine(c)}, item{"Rule", ruleLine(c)})
	if c.HasCPURows() && c.CPUThreshold != c.Threshold {
		items = append(items, item{"CPU rows", cpuLine(c)})
	}
	if !allHaveSamples(c.Runs) {
		items = append(items, item{"Fallback", fallbackLine(c)})
	}
	return append(items, item{"Checks", checksLine})
}

func allHaveSamples(runs []compare.RunInfo) bool {
	for _, r := range runs {
		if !compare.HasSamples(r.Run) {
			return false
		}
	}
	return true
}

// runKey names run i in the header: Old and New for a pair, Run 1, Run 2,
// ... for an ablation.
func runKey(c *compare.Comparison, i int) string {
	if c.Pair() {
		return []string{"Old", "New"}[i]
	}
	return fmt.Sprintf("Run %d", i+1)
}

// runLine is a run's label, file, tool and devices.
func runLine(r compare.RunInfo, s style) string {
	parts := []string{r.Label}
	if r.Path != "" {
		parts = append(parts, s.path(r.Path))
	}
	if tool := report.ToolLine(r.Run.Tool); tool != "" {
		parts = append(parts, tool)
	}
	parts = append(parts, compare.DevicesOf(r.Run))
	sep := "  ·  "
	if s.markdown {
		sep = " · "
	}
	return strings.Join(parts, sep)
}

func comparisonTimingLine(c *compare.Comparison) string {
	against := "ratio = new ÷ old"
	if !c.Pair() {
		against = "ratio = each run ÷ " + c.Runs[0].Label
	}
	return fmt.Sprintf("kernel time, L2 %s, host launch gaps excluded; times are medians ± 95%% CI half-width; %s, below 1 is faster",
		modeName(c.Mode), against)
}

func ruleLine(c *compare.Comparison) string {
	t := cell.Percent(c.Threshold)
	return fmt.Sprintf("faster or slower when a Mann–Whitney U test of the raw samples (of the placements' medians, where rows were "+
		"measured in several) finds a difference (p < %g) and the ratio's 95%% CI (Hodges–Lehmann) lies wholly beyond ±%s; "+
		"same when it lies within ±%s; otherwise unsure", compare.Alpha, t, t)
}

func cpuLine(c *compare.Comparison) string {
	return fmt.Sprintf("rows timed on a CPU are judged as above with ±%s instead of ±%s: a CPU's speed moves between runs "+
		"by more than one run's samples show (--cpu-threshold)", cell.Percent(c.CPUThreshold), cell.Percent(c.Threshold))
}

func fallbackLine(c *compare.Comparison) string {
	t := cell.Percent(c.Threshold)
	return fmt.Sprintf("without raw samples: ratio of the medians; a difference when |ratio − 1| exceeds the two medians' ± noise added "+
		"(each the 95%% CI half-width); the ≈CI is ratio ± that noise; then as the rule, with ±%s", t)
}

const checksLine = "pass → FAIL or ERROR is a REGRESSION and FAIL or ERROR → pass is FIXED, whatever the times"

const comparisonSummaryCaption = "geomean = geometric mean of the ratios over the cases where both rows passed and were timed"

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// modeName is the compared mode for the header.
func modeName(m sdk.L2Mode) string {
	if m == "" {
		return "?"
	}
	return string(m)
}
