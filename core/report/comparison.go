package report

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/flashcore/bench/core/compare"
)

// comparisonFormats are the formats RenderComparison writes: a comparison
// has no JSON of its own, and no charts.
var comparisonFormats = []Format{FormatTable, FormatMarkdown, FormatCSV}

// CheckComparisonFormat reports whether RenderComparison knows f, with an
// error that lists the formats it does know.
func CheckComparisonFormat(f Format) error {
	if f == "" || slices.Contains(comparisonFormats, f) {
		return nil
	}
	return fmt.Errorf("unknown format %q: want table, markdown or csv", f)
}

// RenderComparison writes what compare.Compare found to w: a terminal
// table, GitHub Markdown that starts with the one-line summary for
// release notes, or CSV (one record per row and later run). The judging
// is compare's; this only draws it, with the grid and cells the results
// tables use.
func RenderComparison(w io.Writer, c *compare.Comparison, format Format) error {
	if c == nil {
		return errors.New("compare: nothing to render")
	}
	if err := CheckComparisonFormat(format); err != nil {
		return err
	}
	switch format {
	case FormatMarkdown:
		return writeComparisonMarkdown(w, c)
	case FormatCSV:
		return writeComparisonCSV(w, c)
	}
	return writeComparisonTable(w, c)
}
