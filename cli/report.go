package cli

import (
	"errors"
	"flag"
	"io"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
)

func reportCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	format := fs.String("format", "table", "table, markdown, csv, json, html or benchfmt")
	baseline := fs.String("baseline", "", "backend to compute speedups against (default: the run's)")
	explainTime := fs.Bool("explain-time", false, "print where the run's time went and its slowest rows, instead of the results")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return withCode(ExitUsage, errors.New("usage: flashcore report RESULTS.json [--format F]"))
	}
	if err := runreport.CheckFormat(report.Format(*format)); err != nil {
		return withCode(ExitUsage, err)
	}
	run, err := results.Load(positional[0])
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if *explainTime {
		if err := checkExplainFormat(true, report.Format(*format)); err != nil {
			return withCode(ExitUsage, err)
		}
		return explainTimeOf(stdout, run, true, report.Format(*format))
	}
	return runreport.Render(stdout, run, runreport.Options{Format: report.Format(*format), Baseline: *baseline})
}
