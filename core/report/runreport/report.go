package runreport

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/charts"
	"github.com/flashcore/bench/core/results"
)

var formats = []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON, report.FormatHTML, report.FormatBenchfmt}

// Options control Render.
type Options struct {
	// Format is the output format; "" means report.FormatTable.
	Format report.Format
	// Baseline is the backend speedups are taken against; "" means the
	// suite's baseline (run.Suite.Baseline). report.FormatJSON ignores it.
	Baseline string
}

// CheckFormat reports whether Render knows f, with an error that lists the
// formats it does know.
func CheckFormat(f report.Format) error {
	if f == "" || slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("unknown format %q: want table, markdown, csv, json, html or benchfmt", f)
}

// Render writes run to w in opts.Format. The HTML page carries the
// charts of package charts, drawn from the same view as its tables.
func Render(w io.Writer, run *results.Run, opts Options) error {
	if run == nil {
		return errors.New("report: no run to render")
	}
	if err := CheckFormat(opts.Format); err != nil {
		return err
	}
	if opts.Format == report.FormatJSON {
		return writeJSON(w, run)
	}
	v := report.NewView(run, opts.Baseline)
	switch opts.Format {
	case report.FormatMarkdown:
		return writeMarkdown(w, v)
	case report.FormatCSV:
		return writeCSV(w, v)
	case report.FormatBenchfmt:
		return writeBenchfmt(w, v)
	case report.FormatHTML:
		drawn, err := charts.Draw(v)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return writeHTML(w, v, drawn)
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
