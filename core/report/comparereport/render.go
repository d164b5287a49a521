package comparereport

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report"
)

// formats are the formats Render writes: a comparison
// has no JSON of its own, and no charts.
var formats = []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatCSV}

// CheckFormat reports whether Render knows f, with an
// error that lists the formats it does know.
func CheckFormat(f report.Format) error {
	if f == "" || slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("unknown format %q: want table, markdown or csv", f)
}

// Render writes what compare.Compare found to w: a terminal
// table, GitHub Markdown that starts with the one-line summary for
// release notes, or CSV (one record per row and later run). The judging
// is compare's; this only draws it, with the table and cells the results
// tables use.
func Render(w io.Writer, c *compare.Comparison, format report.Format) error {
	if c == nil {
		return errors.New("compare: nothing to render")
	}
	if err := CheckFormat(format); err != nil {
		return err
	}
	switch format {
	case report.FormatMarkdown:
		return writeComparisonMarkdown(w, c)
	case report.FormatCSV:
		return writeComparisonCSV(w, c)
	}
	return writeComparisonTable(w, c)
}
