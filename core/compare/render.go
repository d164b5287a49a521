package compare

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Format is an output format of Render.
type Format string

const (
	// FormatTable is boxed text tables for a terminal; long reasons are
	// truncated.
	FormatTable Format = "table"
	// FormatMarkdown is GitHub Markdown, ready to paste into release notes.
	FormatMarkdown Format = "markdown"
	// FormatCSV is one record per row and later run, every number in full.
	FormatCSV Format = "csv"
)

var formats = []Format{FormatTable, FormatMarkdown, FormatCSV}

// CheckFormat reports whether Render knows f, with an error that lists the
// formats it does know.
func CheckFormat(f Format) error {
	if f == "" || slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("unknown format %q: want table, markdown or csv", f)
}

// Render writes c to w in format ("" means FormatTable).
func Render(w io.Writer, c *Comparison, format Format) error {
	if c == nil {
		return errors.New("compare: nothing to render")
	}
	if err := CheckFormat(format); err != nil {
		return err
	}
	switch format {
	case FormatMarkdown:
		return writeMarkdown(w, c)
	case FormatCSV:
		return writeCSV(w, c)
	}
	return writeTable(w, c)
}
