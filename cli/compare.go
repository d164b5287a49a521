package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/comparereport"
	"github.com/flashcore/bench/core/results"
)

const compareUsage = "usage: flashcore compare OLD.json NEW.json [NEWER.json ...] [--format table|markdown|csv] " +
	"[--threshold 0.05] [--cpu-threshold 0.35] [--labels a,b,...] [--fail-on-regression]"

// compareCommand sets two or more results files side by side. It exits
// non-zero for what it finds only when --fail-on-regression asks it to.
func compareCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	format := fs.String("format", "table", "table, markdown or csv")
	threshold := fs.Float64("threshold", compare.DefaultThreshold, "smallest relative change that counts (0.05 = 5%)")
	cpuThreshold := fs.Float64("cpu-threshold", compare.DefaultCPUThreshold,
		"smallest relative change that counts for rows timed on a CPU, whose speed moves between runs (0 = --threshold)")
	labels := fs.String("labels", "", "comma-separated names of the runs, one per file (default: suite, version, date)")
	failOnRegression := fs.Bool("fail-on-regression", false, "exit 1 when a row regressed or got slower")
	paths, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(paths) < 2 {
		return withCode(ExitUsage, errors.New(compareUsage))
	}
	if err := comparereport.CheckFormat(report.Format(*format)); err != nil {
		return withCode(ExitUsage, err)
	}
	sources, err := loadSources(paths)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	c, err := compare.Compare(sources, compare.Options{Threshold: *threshold, CPUThreshold: *cpuThreshold, Labels: labelList(*labels)})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := comparereport.Render(stdout, c, report.Format(*format)); err != nil {
		return withCode(ExitOther, err)
	}
	if *failOnRegression && c.Failed() {
		t := c.Total()
		return withCode(ExitFindings, fmt.Errorf("%d regression(s) and %d slower row(s) against %s", t.Regressions, t.Slower, paths[0]))
	}
	return nil
}

func loadSources(paths []string) ([]compare.Source, error) {
	var sources []compare.Source
	for _, p := range paths {
		run, err := results.Load(p)
		if err != nil {
			return nil, err
		}
		sources = append(sources, compare.Source{Path: p, Run: run})
	}
	return sources, nil
}

// labelList splits --labels; nil when it was not given, so that the runs
// keep their default names.
func labelList(s string) []string {
	if s == "" {
		return nil
	}
	return splitList(s)
}
