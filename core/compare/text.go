package compare

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/sdk"
)

// item is one line of the header block.
type item struct{ key, value string }

// style is what differs between the terminal and Markdown.
type style struct {
	markdown bool
	// path quotes a file path.
	path func(string) string
	// loud marks the verdicts a reader must not miss.
	loud func(string) string
}

var (
	terminal = style{path: func(p string) string { return p }, loud: func(s string) string { return s }}
	markdown = style{markdown: true, path: func(p string) string { return "`" + p + "`" },
		loud: func(s string) string { return "**" + s + "**" }}
)

func writeTable(w io.Writer, c *Comparison) error {
	var out bytes.Buffer
	out.WriteString("FlashCore bench comparison: " + c.SummaryLine() + "\n")
	for _, it := range headerItems(c, terminal) {
		fmt.Fprintf(&out, "  %-9s %s\n", it.key, it.value)
	}
	for _, warning := range c.Warnings {
		fmt.Fprintf(&out, "  %-9s %s\n", "Warning", warning)
	}
	for _, d := range c.Differences {
		fmt.Fprintf(&out, "  %-9s %s\n", "Changed", d)
	}
	out.WriteString("\n")
	if err := writeBody(&out, c, terminal, "  note: "); err != nil {
		return err
	}
	if changes := correctnessGrid(c, terminal); len(changes.rows) > 0 {
		out.WriteString("\nCorrectness changes\n")
		if err := drawGrid(&out, changes, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\nSummary  ·  %s\n", summaryCaption)
	if err := drawGrid(&out, summaryGrid(c), false); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

func writeMarkdown(w io.Writer, c *Comparison) error {
	var out bytes.Buffer
	out.WriteString(c.SummaryLine() + "\n\n")
	out.WriteString("## FlashCore bench comparison\n\n")
	for _, it := range headerItems(c, markdown) {
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
	if err := writeBody(&out, c, markdown, "\n> Note: "); err != nil {
		return err
	}
	if changes := correctnessGrid(c, markdown); len(changes.rows) > 0 {
		out.WriteString("\n### Correctness changes\n\n")
		if err := drawGrid(&out, changes, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\n### Summary\n\n%s.\n\n", capitalize(summaryCaption))
	if err := drawGrid(&out, summaryGrid(c), true); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

// writeBody writes the table of every row and the notes that qualify it.
func writeBody(out *bytes.Buffer, c *Comparison, s style, notePrefix string) error {
	if len(c.Rows) == 0 {
		out.WriteString("(no rows in any run)\n")
		return nil
	}
	g := ablationGrid(c, s)
	if c.pair() {
		g = pairGrid(c, s)
	}
	if err := drawGrid(out, g, s.markdown); err != nil {
		return err
	}
	for _, n := range c.Notes {
		out.WriteString(notePrefix + n + "\n")
	}
	return nil
}

// headerItems are the lines of the header block: one per run, then how
// times and verdicts are read.
func headerItems(c *Comparison, s style) []item {
	var items []item
	for i, r := range c.Runs {
		items = append(items, item{runKey(c, i), runLine(r, s)})
	}
	items = append(items, item{"Timing", timingLine(c)}, item{"Rule", ruleLine(c)})
	if !allHaveSamples(c.Runs) {
		items = append(items, item{"Fallback", fallbackLine(c)})
	}
	return append(items, item{"Checks", checksLine})
}

func allHaveSamples(runs []RunInfo) bool {
	for _, r := range runs {
		if !hasSamples(r.Run) {
			return false
		}
	}
	return true
}

// runKey names run i in the header: Old and New for a pair, Run 1, Run 2,
// ... for an ablation.
func runKey(c *Comparison, i int) string {
	if c.pair() {
		return []string{"Old", "New"}[i]
	}
	return fmt.Sprintf("Run %d", i+1)
}

// runLine is a run's label, file, tool and devices.
func runLine(r RunInfo, s style) string {
	parts := []string{r.Label}
	if r.Path != "" {
		parts = append(parts, s.path(r.Path))
	}
	if tool := toolLine(r); tool != "" {
		parts = append(parts, tool)
	}
	parts = append(parts, devicesOf(r.Run))
	sep := "  ·  "
	if s.markdown {
		sep = " · "
	}
	return strings.Join(parts, sep)
}

func toolLine(r RunInfo) string {
	t := r.Run.Tool
	switch {
	case t.Version == "":
		return ""
	case t.GitCommit == "":
		return "flashcore " + t.Version
	}
	return fmt.Sprintf("flashcore %s (%s)", t.Version, t.GitCommit)
}

func timingLine(c *Comparison) string {
	against := "ratio = new ÷ old"
	if !c.pair() {
		against = "ratio = each run ÷ " + c.Runs[0].Label
	}
	return fmt.Sprintf("kernel time, L2 %s, host launch gaps excluded; times are medians ± 95%% CI half-width; %s, below 1 is faster",
		modeName(c.Mode), against)
}

func ruleLine(c *Comparison) string {
	t := thresholdPercent(c.Threshold)
	return fmt.Sprintf("faster or slower when a Mann–Whitney U test of the raw samples finds a difference (p < %g) and the ratio "+
		"(Hodges–Lehmann) is beyond ±%s; same when the ratio's 95%% CI lies within ±%s; otherwise unsure", Alpha, t, t)
}

func fallbackLine(c *Comparison) string {
	t := thresholdPercent(c.Threshold)
	return fmt.Sprintf("without raw samples: ratio of the medians; a difference when |ratio − 1| exceeds the two medians' ± noise added "+
		"(each the 95%% CI half-width); the ≈CI is ratio ± that noise; then as the rule, with ±%s", t)
}

const checksLine = "pass → FAIL or ERROR is a REGRESSION and FAIL or ERROR → pass is FIXED, whatever the times"

// thresholdPercent writes a threshold as a percentage: "5%", "2.5%".
func thresholdPercent(t float64) string {
	return fmt.Sprintf("%.4g%%", t*100)
}

const summaryCaption = "geomean = geometric mean of the ratios over the cases where both rows passed and were timed"

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
