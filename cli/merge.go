package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/shard"
)

// mergeCommand builds one results file from the files of a sharded run.
// It refuses inputs that are not slices of one run (nothing is written);
// with shards missing it still writes what there is, marked incomplete,
// and exits 3. Otherwise it exits as run would on the merged rows.
func mergeCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	format := fs.String("format", "table", "table, markdown, csv or json; the merged table on stdout")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(positional) < 2 {
		return withCode(ExitUsage, errors.New("usage: flashcore merge OUT.json IN1.json [IN2.json ...]"))
	}
	if err := runreport.CheckFormat(report.Format(*format)); err != nil {
		return withCode(ExitUsage, err)
	}
	out, inputs := positional[0], make([]shard.Input, 0, len(positional)-1)
	for _, path := range positional[1:] {
		run, err := results.Load(path)
		if err != nil {
			return withCode(ExitOther, err)
		}
		inputs = append(inputs, shard.Input{Source: path, Run: run})
	}
	run, rep, err := shard.Merge(inputs, "flashcore merge "+strings.Join(args, " "))
	if err != nil {
		return withCode(ExitOther, fmt.Errorf("merge refused: %w", err))
	}
	if err := results.NewWriter(out).Save(run); err != nil {
		return withCode(ExitOther, err)
	}
	if err := runreport.Render(stdout, run, runreport.Options{Format: report.Format(*format)}); err != nil {
		return err
	}
	fmt.Fprintln(stderr, mergeSummary(out, run, rep, len(inputs)))
	if !rep.Complete() {
		return withCode(ExitFailures, fmt.Errorf("%s is incomplete: %s", out, incompleteness(rep)))
	}
	return verdictError(run, false)
}

func mergeSummary(out string, run *results.Run, rep shard.Report, files int) string {
	what := fmt.Sprintf("%d file(s)", files)
	if rep.Count > 0 {
		what = fmt.Sprintf("%d of %d shard(s)", rep.Count-len(rep.Missing), rep.Count)
	}
	s := fmt.Sprintf("merged %s: %d case(s), %d row(s) into %s", what, len(run.Cases), len(run.Results), out)
	if rep.Duplicates > 0 {
		s += fmt.Sprintf("; %d row(s) present twice with equal values kept once", rep.Duplicates)
	}
	return s
}

func incompleteness(rep shard.Report) string {
	var parts []string
	if len(rep.Missing) > 0 {
		missing := make([]string, len(rep.Missing))
		for i, m := range rep.Missing {
			missing[i] = fmt.Sprintf("%d/%d", m, rep.Count)
		}
		parts = append(parts, "missing shard(s) "+strings.Join(missing, ", "))
	}
	if len(rep.Unfinished) > 0 {
		parts = append(parts, "unfinished: "+strings.Join(rep.Unfinished, ", "))
	}
	return strings.Join(parts, "; ")
}
