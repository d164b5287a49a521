package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

const ablateUsage = `flashcore ablate: an ordered chain of backends, step by step

Usage:
  flashcore ablate [--suite FILE] [--chain a,b:variant,c] [--case ID] [--format table|markdown] [--out FILE]
  flashcore ablate RESULTS.json --chain a,b:variant,c [--format table|markdown]

Runs each step of the chain (a backend, meaning its first variant, or
backend:variant) on the suite's cases, in the suite's primary L2 mode, and
prints per case the seeds' ablation table: kernel time, speedup over the
step before and over the first step, relative L2 error against the fp64
reference, verdict, and the key change (the variant's description). The
chain is --chain, else the suite's [ablation] chain. Given a results file,
it draws the table from that run instead of measuring (docs/loop.md).

Exit codes: 0 done, 1 a step FAILed its check, 2 usage or suite error, 3 a
step is an ERROR, 4 other errors, 5 a backend of the chain is unavailable,
130 interrupted.
`

// DefaultAblateResultsPath is where `flashcore ablate` saves its run.
const DefaultAblateResultsPath = "flashcore-ablate.json"

func ablateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ablate", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, ablateUsage) }
	suitePath := fs.String("suite", "", "suite TOML file (default: the embedded default suite)")
	chainFlag := fs.String("chain", "", "comma-separated steps, backend or backend:variant (default: the suite's [ablation] chain)")
	caseID := fs.String("case", "", "run only this case of the suite")
	format := fs.String("format", "table", "table or markdown")
	out := fs.String("out", DefaultAblateResultsPath, "results JSON file of the run")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	markdown, err := gateFormat(*format)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(positional) > 1 {
		return withCode(ExitUsage, errors.New("usage: flashcore ablate [RESULTS.json] [--suite FILE] [--chain a,b,c]"))
	}
	var s *suite.Suite
	if len(positional) == 0 || *chainFlag == "" {
		if s, err = loadSuite(*suitePath); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	chain, err := chainOf(*chainFlag, s)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(positional) == 1 {
		run, err := results.Load(positional[0])
		if err != nil {
			return withCode(ExitUsage, err)
		}
		return runreport.WriteAblation(stdout, run, chain, markdown)
	}
	if *caseID != "" {
		c, ok := s.Case(*caseID)
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("case %q is not in suite %s (cases: %s)", *caseID, s.Name, caseIDs(s)))
		}
		s.Cases = []op.Case{c}
	}
	run, err := runChain(ctx, s, chain, *out, stderr)
	if run != nil && len(run.Results) > 0 {
		if err := runreport.WriteAblation(stdout, run, chain, markdown); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return verdictError(run, true)
}

func chainOf(flagValue string, s *suite.Suite) ([]suite.ChainStep, error) {
	if flagValue != "" {
		chain, err := suite.ParseChain(strings.Split(flagValue, ","))
		if err == nil && len(chain) < 2 {
			err = fmt.Errorf("a chain has at least two steps, got %d", len(chain))
		}
		if err != nil {
			return nil, fmt.Errorf("--chain: %w", err)
		}
		return chain, nil
	}
	if s == nil || len(s.Ablation.Chain) == 0 {
		return nil, errors.New("no chain: give --chain a,b,c or an [ablation] chain in the suite")
	}
	return s.Ablation.Chain, nil
}

// runChain measures exactly the chain's rows: each backend once, with the
// variants its steps name (its first variant for a step that names none),
// in the suite's primary L2 mode.
func runChain(ctx context.Context, s *suite.Suite, chain []suite.ChainStep, out string, stderr io.Writer) (*results.Run, error) {
	var names []string
	for _, step := range chain {
		if !slices.Contains(names, step.Backend) {
			names = append(names, step.Backend)
		}
	}
	plugins, err := choosePlugins(s, names)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	cut := s.OnlyL2(s.L2Modes[0])
	if cut.Backends, err = chainSelections(ctx, s, plugins, chain); err != nil {
		return nil, err
	}
	run, err := runner.Run(ctx, runner.Config{
		Suite:       cut,
		Plugins:     plugins,
		ResultsPath: out,
		Tool:        results.Tool{Version: Version, GitCommit: GitCommit},
		Command:     "flashcore ablate --chain " + chainString(chain),
		Progress:    stderr,
	})
	if out != "" && run != nil {
		fmt.Fprintf(stderr, "results saved to %s\n", out)
	}
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return run, withCode(ExitInterrupted, err)
		}
		return run, withCode(ExitOther, err)
	}
	return run, nil
}

// chainSelections picks, per backend, the variants the chain runs. A step
// without a variant needs the backend's description to know its first.
func chainSelections(ctx context.Context, s *suite.Suite, plugins []host.Plugin, chain []suite.ChainStep) ([]suite.BackendSelection, error) {
	descriptions := describeAll(ctx, plugins, s)
	var out []suite.BackendSelection
	for i, p := range plugins {
		d := descriptions[i]
		sel := s.Selection(p.Name)
		sel.Variants, sel.Tunables = nil, nil // each step at its defaults
		for _, step := range chain {
			if step.Backend != p.Name {
				continue
			}
			variant := step.Variant
			if variant == "" && len(d.Variants) > 0 {
				variant = d.Variants[0].Name
			}
			if variant != "" && !slices.Contains(sel.Variants, variant) {
				if d.Available && !slices.ContainsFunc(d.Variants, func(v sdk.Variant) bool { return v.Name == variant }) {
					return nil, withCode(ExitUsage, fmt.Errorf("--chain step %s: backend %s has no variant %q", step, p.Name, variant))
				}
				sel.Variants = append(sel.Variants, variant)
			}
		}
		if !d.Available {
			sel.Variants = nil
		}
		out = append(out, sel)
	}
	return out, nil
}

func chainString(chain []suite.ChainStep) string {
	parts := make([]string, len(chain))
	for i, step := range chain {
		parts[i] = step.String()
	}
	return strings.Join(parts, ",")
}
