package report

import (
	"fmt"

	"github.com/flashcore/bench/core/results"
)

// Format is an output format of a report. The run report writes every
// one; a comparison writes table, markdown and csv.
type Format string

const (
	// FormatTable is boxed text tables for a terminal; long reasons are
	// truncated.
	FormatTable Format = "table"
	// FormatMarkdown is GitHub Markdown, ready to paste into release notes.
	FormatMarkdown Format = "markdown"
	// FormatCSV is one flat row per result with every number, untruncated.
	FormatCSV Format = "csv"
	// FormatJSON is the run itself, as the results file holds it.
	FormatJSON Format = "json"
	// FormatHTML is one self-contained HTML page: the header, the charts
	// inline as SVG, and every table; it needs no network to open.
	FormatHTML Format = "html"
	// FormatBenchfmt is Go's benchmark text format, one line per raw
	// kernel sample, for benchstat.
	FormatBenchfmt Format = "benchfmt"
)

// ToolLine names the flashcore that wrote a run: "flashcore 0.9.0
// (1a2b3c4)"; "" when the run does not say.
func ToolLine(t results.Tool) string {
	switch {
	case t.Version == "":
		return ""
	case t.GitCommit == "":
		return "flashcore " + t.Version
	}
	return fmt.Sprintf("flashcore %s (%s)", t.Version, t.GitCommit)
}

// DeviceLine names the device a run was timed on, for a chart's subtitle
// or a benchmark file's configuration: the first GPU, else the CPU.
func DeviceLine(e results.Environment) string {
	switch {
	case len(e.GPUs) > 0:
		return e.GPUs[0].Name
	case e.CPU != "":
		return e.CPU + " (no GPU)"
	}
	return "unknown device"
}
