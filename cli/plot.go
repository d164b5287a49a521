package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/charts"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
)

// DefaultPlotDir is where `flashcore plot` writes unless --out says
// otherwise.
const DefaultPlotDir = "flashcore-plots"

// plotCommand writes the run's charts as SVG files, and the HTML report
// with the same charts inline, into a directory; it lists what it wrote.
func plotCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fs.String("out", DefaultPlotDir, "directory for the SVG charts and report.html")
	baseline := fs.String("baseline", "", "backend to compute speedups against (default: the run's)")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return withCode(ExitUsage, errors.New("usage: flashcore plot RESULTS.json [--out DIR] [--baseline BACKEND]"))
	}
	run, err := results.Load(positional[0])
	if err != nil {
		return withCode(ExitUsage, err)
	}
	drawn, err := charts.Draw(report.NewView(run, *baseline))
	if err != nil {
		return withCode(ExitOther, err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return withCode(ExitOther, fmt.Errorf("plot: %w", err))
	}
	for _, c := range drawn {
		if err := writePlotFile(stdout, *out, c.File, c.SVG); err != nil {
			return err
		}
	}
	html, err := os.CreateTemp(*out, ".report-*.html")
	if err != nil {
		return withCode(ExitOther, fmt.Errorf("plot: %w", err))
	}
	defer os.Remove(html.Name())
	renderErr := runreport.Render(html, run, runreport.Options{Format: report.FormatHTML, Baseline: *baseline})
	if err := errors.Join(renderErr, html.Close()); err != nil {
		return withCode(ExitOther, fmt.Errorf("plot: report.html: %w", err))
	}
	if err := os.Rename(html.Name(), filepath.Join(*out, "report.html")); err != nil {
		return withCode(ExitOther, fmt.Errorf("plot: %w", err))
	}
	fmt.Fprintln(stdout, filepath.Join(*out, "report.html"))
	return nil
}

func writePlotFile(stdout io.Writer, dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return withCode(ExitOther, fmt.Errorf("plot: %w", err))
	}
	fmt.Fprintln(stdout, path)
	return nil
}
