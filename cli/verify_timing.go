package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/timingcheck"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

const verifyTimingUsage = `flashcore verify-timing: our kernel times against CUPTI and Nsight Compute

Usage:
  flashcore verify-timing [--suite FILE] [--backends a,b] [--l2 hot|cold]
                          [--reference auto|cupti|ncu] [--out DIR]

Runs the suite as ` + "`flashcore run`" + ` does and checks, row by row, our median
kernel time against a reference measured apart from it:

  cupti  the backend times the very calls it sampled a second way, by
         CUPTI's activity records, each call's kernels, memsets and copies
         told apart from other calls by correlation (not by the device's
         order, nor by events around them): the Go CUDA plugins mark each
         call with a CUPTI external correlation id, the Python bridges' worker
         runs each in its own profiler range. Taken only from the plugins
         shipped with this flashcore
  ncu    each backend runs again under Nsight Compute (--clock-control
         none, --cache-control none for hot or all for cold), one session
         per plugin, every call marked with NVTX ranges: the median over
         calls of gpu__time_duration.sum, summed over each call's kernels,
         the calls spread over placements of the buffers as the run's are.
         ncu sees no memsets and reads about 1 µs more per kernel than
         CUPTI does
  auto   (default) cupti for the rows of the plugins shipped with this
         flashcore, ncu for the others

A row PASSes when |ours - reference| <= max(2% of reference, 0.5 µs). Under
ncu, a row that runs another kernel than it did unprofiled (Triton's
autotuner choosing another config, say; both runs share one autotuning
cache in DIR to prevent it) has no comparable figure. Results, ncu reports
and logs go to DIR (default flashcore-verify-timing). See
docs/profiling.md.

Exit codes: 0 every GPU row PASSed, 1 a row FAILed the bound, 2 usage or
suite error, 3 a row has no figure (a plugin error, the reference timed
none of its calls, or it ran another kernel under ncu), 4 other errors (ncu
missing or not allowed to read the counters), 130 interrupted.
`

func verifyTimingCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify-timing", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, verifyTimingUsage) }
	suitePath := fs.String("suite", "", "suite TOML file (default: the embedded default suite)")
	backends := fs.String("backends", "", "comma-separated backends (default: the suite's, else all found)")
	l2 := fs.String("l2", "hot", "L2 mode to check: hot or cold")
	reference := fs.String("reference", timingcheck.ReferenceAuto, "auto, cupti or ncu")
	outDir := fs.String("out", "flashcore-verify-timing", "directory for the results, ncu reports and logs")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	mode := sdk.L2Mode(*l2)
	if mode != sdk.L2Hot && mode != sdk.L2Cold {
		return withCode(ExitUsage, fmt.Errorf("--l2 %q: want hot or cold", *l2))
	}
	switch *reference {
	case timingcheck.ReferenceAuto, ncu.ReferenceCupti, ncu.ReferenceNcu:
	default:
		return withCode(ExitUsage, fmt.Errorf("--reference %q: want auto, cupti or ncu", *reference))
	}
	dir, err := checkOutDir(*outDir)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	s, err := loadSuite(*suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	plugins, err := choosePlugins(s, splitList(*backends))
	if err != nil {
		return withCode(ExitUsage, err)
	}
	// ncu is looked for before the run, so that a missing ncu costs no
	// time. With auto, rows timed by CUPTI need no ncu: the run goes on,
	// and the rows that need it say why they have no figure.
	var tool ncu.Tool
	var noNcu error
	if *reference != ncu.ReferenceCupti {
		if tool, noNcu = ncu.Find(); noNcu != nil {
			if *reference == ncu.ReferenceNcu {
				return withCode(ExitOther, noNcu)
			}
			fmt.Fprintf(stderr, "flashcore: %v; rows that need ncu will have no figure\n", noNcu)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return withCode(ExitOther, err)
	}
	run, err := runner.Run(ctx, runner.Config{
		Suite: s.OnlyL2(mode), Plugins: plugins, ResultsPath: filepath.Join(dir, "results.json"),
		Tool: results.Tool{Version: Version, GitCommit: GitCommit}, Progress: stderr,
		Command:     "flashcore verify-timing " + strings.Join(args, " "),
		HostOptions: host.Options{Env: timingcheck.RunEnv(dir, *reference)},
	})
	if err != nil {
		return runError(err)
	}
	self, _ := os.Executable() // "" on error: no plugin counts as shipped
	rows := timingcheck.Rows(run, plugins, mode, *reference, self)
	if noNcu != nil {
		timingcheck.WithoutNcu(rows, noNcu)
	}
	if err := timingcheck.Measure(ctx, tool, s, mode, rows, dir, stderr); err != nil {
		return withCode(ExitOther, err)
	}
	figures := timingcheck.Figures(rows)
	if err := ncu.WriteTiming(stdout, string(mode), figures); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "results, ncu reports and logs in %s\n", dir)
	return timingVerdict(figures)
}

func runError(err error) error {
	if errors.Is(err, runner.ErrInterrupted) {
		return withCode(ExitInterrupted, err)
	}
	return withCode(ExitOther, err)
}

// timingVerdict is the exit code of verify-timing: rows without a figure
// first, then rows outside the bound.
func timingVerdict(rows []ncu.TimingRow) error {
	failed, errored := timingcheck.Tally(rows)
	switch {
	case errored > 0:
		return withCode(ExitFailures, fmt.Errorf("%d row(s) have no reference figure, %d FAILed the bound", errored, failed))
	case failed > 0:
		return withCode(ExitFindings, fmt.Errorf("%d row(s) FAILed the bound against their reference", failed))
	}
	return nil
}
