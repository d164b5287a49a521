package report

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/flashcore/bench/core/results"
)

// Format is an output format of Render.
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

var formats = []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON, FormatHTML, FormatBenchfmt}

// Options control Render.
type Options struct {
	// Format is the output format; "" means FormatTable.
	Format Format
	// Baseline is the backend speedups are taken against; "" means the
	// suite's baseline (run.Suite.Baseline). FormatJSON ignores it.
	Baseline string
}

// CheckFormat reports whether Render knows f, with an error that lists the
// formats it does know.
func CheckFormat(f Format) error {
	if f == "" || slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("unknown format %q: want table, markdown, csv, json, html or benchfmt", f)
}

// Render writes run to w in opts.Format.
func Render(w io.Writer, run *results.Run, opts Options) error {
	if run == nil {
		return errors.New("report: no run to render")
	}
	if err := CheckFormat(opts.Format); err != nil {
		return err
	}
	if opts.Format == FormatJSON {
		return writeJSON(w, run)
	}
	v := buildView(run, opts.Baseline)
	switch opts.Format {
	case FormatMarkdown:
		return writeMarkdown(w, v)
	case FormatCSV:
		return writeCSV(w, v)
	case FormatBenchfmt:
		return writeBenchfmt(w, v)
	case FormatHTML:
		charts, err := Charts(run, opts)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return writeHTML(w, v, charts)
	}
	return writeTable(w, v)
}

func writeJSON(w io.Writer, run *results.Run) error {
	data, err := results.Marshal(run)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(data)
	return err
}
