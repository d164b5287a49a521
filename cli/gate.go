package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/gate"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
)

const gateUsage = `flashcore gate: hold every row to the suite's [gates]

Usage:
  flashcore gate [--suite FILE] [--backends a,b] [--runs N] [--max-registers R]
                 [--max-spill-bytes B] [--max-shared-bytes S] [--min-occupancy O]
                 [--format table|markdown] [--out FILE]
  flashcore gate RESULTS.json [--suite FILE] [limit flags]

Runs the suite with every row's checked run done N times on the same
inputs (the suite's [gates] runs, default 3) and judges each row on:
correctness (the checker's verdict), determinism (bit-identical outputs,
else by how much they differ), stability (no crash, no NaN or Inf) and,
for the CUDA backends, the resources of the launched function: registers
per thread, spill bytes, shared memory per block and theoretical
occupancy. Flags override the suite's limits. Given a results file, it
judges that run instead of measuring (docs/loop.md).

Exit codes: 0 every gate passed, 6 a gate FAILed, 2 usage or suite error,
3 a plugin failed to start or describe itself, 4 other errors, 5 a backend
named with --backends is unavailable, 130 interrupted.
`

// DefaultGateResultsPath is where `flashcore gate` saves the run it judges.
const DefaultGateResultsPath = "flashcore-gate.json"

type gateFlags struct {
	suitePath, backends, format, out string
	runs, maxRegisters               int
	maxSpill, maxShared              int
	minOccupancy                     float64
}

func gateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, gateUsage) }
	var f gateFlags
	fs.StringVar(&f.suitePath, "suite", "", "suite TOML file (default: the embedded default suite)")
	fs.StringVar(&f.backends, "backends", "", "comma-separated backends to gate (default: the suite's, else all found)")
	fs.StringVar(&f.format, "format", "table", "table or markdown")
	fs.StringVar(&f.out, "out", DefaultGateResultsPath, "results JSON file of the gated run")
	fs.IntVar(&f.runs, "runs", 0, "checked runs per row (overrides [gates] runs)")
	fs.IntVar(&f.maxRegisters, "max-registers", 0, "most registers per thread (overrides [gates] max_registers)")
	fs.IntVar(&f.maxSpill, "max-spill-bytes", 0, "most spill bytes per thread, -1 not judged (overrides [gates] max_spill_bytes)")
	fs.IntVar(&f.maxShared, "max-shared-bytes", 0, "most shared memory per block (overrides [gates] max_shared_bytes)")
	fs.Float64Var(&f.minOccupancy, "min-occupancy", 0, "least theoretical occupancy, 0 to 1 (overrides [gates] min_occupancy)")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	markdown, err := gateFormat(f.format)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(positional) > 1 {
		return withCode(ExitUsage, errors.New("usage: flashcore gate [RESULTS.json] [--suite FILE] [flags]"))
	}
	s, err := loadSuite(f.suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := overrideGates(&s.Gates, fs, f); err != nil {
		return withCode(ExitUsage, err)
	}
	run, named, err := gatedRun(ctx, s, positional, f, stderr)
	if err != nil {
		return err
	}
	outcome := gate.Judge(run, s.Gates)
	if err := runreport.WriteGates(stdout, outcome, markdown); err != nil {
		return err
	}
	return gateVerdict(run, outcome, named)
}

func gateFormat(format string) (markdown bool, err error) {
	switch format {
	case "table":
		return false, nil
	case "markdown":
		return true, nil
	}
	return false, fmt.Errorf("unknown format %q: want table or markdown", format)
}

// overrideGates applies the limit flags given on the command line, and
// holds them to the rules the suite's keys follow.
func overrideGates(g *suite.Gates, fs *flag.FlagSet, f gateFlags) error {
	var problems []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "runs":
			g.Runs = f.runs
			if f.runs < 1 {
				problems = append(problems, fmt.Sprintf("--runs must be at least 1, got %d", f.runs))
			}
		case "max-registers":
			g.MaxRegisters = f.maxRegisters
			if f.maxRegisters < 0 {
				problems = append(problems, fmt.Sprintf("--max-registers must be at least 0, got %d", f.maxRegisters))
			}
		case "max-spill-bytes":
			g.MaxSpillBytes = f.maxSpill
			if f.maxSpill < -1 {
				problems = append(problems, fmt.Sprintf("--max-spill-bytes must be at least -1, got %d", f.maxSpill))
			}
		case "max-shared-bytes":
			g.MaxSharedBytes = f.maxShared
			if f.maxShared < 0 {
				problems = append(problems, fmt.Sprintf("--max-shared-bytes must be at least 0, got %d", f.maxShared))
			}
		case "min-occupancy":
			g.MinOccupancy = f.minOccupancy
			if !(f.minOccupancy >= 0 && f.minOccupancy <= 1) {
				problems = append(problems, fmt.Sprintf("--min-occupancy must be a fraction from 0 to 1 (0.25 is 25%%), got %g", f.minOccupancy))
			}
		}
	})
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// gatedRun measures the suite with each checked run repeated Runs times,
// or loads the results file given.
func gatedRun(ctx context.Context, s *suite.Suite, positional []string, f gateFlags, stderr io.Writer) (*results.Run, bool, error) {
	if len(positional) == 1 {
		run, err := results.Load(positional[0])
		if err != nil {
			return nil, false, withCode(ExitUsage, err)
		}
		return run, false, nil
	}
	s.Check.Repeat = s.Gates.Runs
	plugins, err := choosePlugins(s, splitList(f.backends))
	if err != nil {
		return nil, false, withCode(ExitUsage, err)
	}
	run, err := runner.Run(ctx, runner.Config{
		Suite:       s,
		Plugins:     plugins,
		ResultsPath: f.out,
		Tool:        results.Tool{Version: Version, GitCommit: GitCommit},
		Command:     "flashcore gate " + f.describe(),
		Progress:    stderr,
	})
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return nil, false, withCode(ExitInterrupted, err)
		}
		return nil, false, withCode(ExitOther, err)
	}
	if f.out != "" {
		fmt.Fprintf(stderr, "results saved to %s\n", f.out)
	}
	return run, f.backends != "", nil
}

func (f gateFlags) describe() string {
	parts := []string{}
	if f.suitePath != "" {
		parts = append(parts, "--suite "+f.suitePath)
	}
	if f.backends != "" {
		parts = append(parts, "--backends "+f.backends)
	}
	return strings.Join(parts, " ")
}

// gateVerdict: a failed gate first, then plugins that faulted before their
// first row, then backends asked for by name that turned out unavailable,
// then a run with nothing to judge.
func gateVerdict(run *results.Run, o *gate.Outcome, named bool) error {
	if !o.Passed() {
		return withCode(ExitGate, fmt.Errorf("%d gate(s) FAILed", len(o.Failures)))
	}
	faulted, unavailable := backendsNotRun(run, named)
	if len(faulted) > 0 {
		return withCode(ExitFailures, fmt.Errorf("plugin(s) failed before their first row, so nothing of theirs was gated: %s", strings.Join(faulted, "; ")))
	}
	if len(unavailable) > 0 {
		return withCode(ExitUnavailable, fmt.Errorf("asked-for backend(s) unavailable: %s", strings.Join(unavailable, "; ")))
	}
	if o.Judged() == 0 {
		return withCode(ExitOther, errors.New("no row was run: nothing to gate"))
	}
	return nil
}
