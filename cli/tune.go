package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/tune"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Default paths of `flashcore tune`'s outputs.
const (
	DefaultTunedPath     = "flashcore-tuned.toml"
	DefaultTuneStatePath = "flashcore-tune-state.json"
)

type tuneFlags struct {
	backend, variant, suite, cases string
	budget, population             int
	timeLimit                      time.Duration
	seed                           uint64
	resume, out, format            string
}

func parseTuneFlags(args []string, stderr io.Writer) (*tuneFlags, error) {
	f := &tuneFlags{}
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.StringVar(&f.backend, "backend", "", "the backend whose tunables to search (required)")
	fs.StringVar(&f.variant, "variant", "", "the variant to tune (default: the backend's first variant with tunables)")
	fs.StringVar(&f.suite, "suite", "", "suite TOML file: its cases, measurement and tolerances (default: the embedded default suite)")
	fs.StringVar(&f.cases, "cases", "", "comma-separated case IDs of the suite to tune (default: every case)")
	fs.IntVar(&f.budget, "budget", 40, "evaluations per case, counting those of a resumed search")
	fs.DurationVar(&f.timeLimit, "time", 0, "stop after this long (e.g. 5m); 0: no limit")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the search's random source (the same seed replays the same candidates)")
	fs.IntVar(&f.population, "population", tune.DefaultSettings().Population, "configurations per generation")
	fs.StringVar(&f.resume, "resume", "", "state file: continue the search saved there, and keep saving to it (default: start afresh in "+DefaultTuneStatePath+")")
	fs.StringVar(&f.out, "out", DefaultTunedPath, "where to write the best configuration per case (a tuned file suites can name)")
	fs.StringVar(&f.format, "format", "table", "table or markdown")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return nil, err
	}
	switch {
	case len(positional) > 0:
		return nil, withCode(ExitUsage, fmt.Errorf("unexpected argument %q", positional[0]))
	case f.backend == "":
		return nil, withCode(ExitUsage, errors.New("--backend is required: name the backend to tune"))
	case f.budget < 1:
		return nil, withCode(ExitUsage, fmt.Errorf("--budget %d: want at least 1 evaluation", f.budget))
	case f.population < 1:
		return nil, withCode(ExitUsage, fmt.Errorf("--population %d: want at least 1", f.population))
	case f.timeLimit < 0:
		return nil, withCode(ExitUsage, fmt.Errorf("--time %s: want a positive duration", f.timeLimit))
	case f.format != "table" && f.format != "markdown":
		return nil, withCode(ExitUsage, fmt.Errorf("--format %q: tune prints table or markdown", f.format))
	}
	return f, nil
}

func tuneCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseTuneFlags(args, stderr)
	if err != nil {
		return err
	}
	s, err := loadSuite(f.suite)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	cases, err := chooseCases(s, f.cases)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	plugins, err := choosePlugins(s, []string{f.backend})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	plugin := plugins[0]
	desc := runner.Describe(ctx, plugin, hostOptions(s))
	if !desc.Available {
		return withCode(ExitUnavailable, fmt.Errorf("backend %s is unavailable: %s", plugin.Name, desc.UnavailableReason))
	}
	variant, err := chooseTuneVariant(desc, f.variant)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	statePath := f.resume
	if statePath == "" {
		statePath = DefaultTuneStatePath
	}
	st, err := tuneState(f, plugin.Name, variant.Name, s.SHA256)
	if err != nil {
		return err
	}
	space := tune.Space{Tunables: variant.Tunables}
	searchCtx := ctx
	if f.timeLimit > 0 {
		var cancel context.CancelFunc
		searchCtx, cancel = context.WithTimeout(ctx, f.timeLimit)
		defer cancel()
	}
	tuneErr := tune.Tune(searchCtx, st, tune.Job{
		Space:     space,
		Cases:     cases,
		Budget:    f.budget,
		Evaluator: &tune.RunEvaluator{Suite: s, Plugin: plugin, Variant: variant.Name, Progress: stderr},
		Save:      func(st *tune.State) error { return st.Save(statePath) },
		Progress:  stderr,
	})
	return finishTune(ctx, tuneErr, st, space, f, statePath, stdout, stderr)
}

// finishTune writes what the search found, however it ended, and turns the
// ending into the exit code.
func finishTune(ctx context.Context, tuneErr error, st *tune.State, space tune.Space, f *tuneFlags, statePath string, stdout, stderr io.Writer) error {
	interrupted := ctx.Err() != nil
	timedOut := !interrupted && errors.Is(tuneErr, context.DeadlineExceeded)
	if timedOut {
		fmt.Fprintf(stderr, "tune: --time %s is up; the evaluation in progress was dropped\n", f.timeLimit)
		tuneErr = nil
	}
	if err := st.Save(statePath); err != nil && tuneErr == nil {
		tuneErr = err
	}
	best := tune.BestTuned(st, space)
	if len(best.Cases) > 0 {
		data, err := best.Encode()
		if err == nil {
			err = os.WriteFile(f.out, data, 0o644)
		}
		if err != nil {
			return withCode(ExitOther, fmt.Errorf("write %s: %w", f.out, err))
		}
	}
	if err := tune.WriteTable(stdout, st, space, f.format == "markdown"); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "search state saved to %s (continue with --resume %s)\n", statePath, statePath)
	if len(best.Cases) > 0 {
		fmt.Fprintf(stderr, "best configurations written to %s\n", f.out)
	}
	switch {
	case interrupted:
		return withCode(ExitInterrupted, fmt.Errorf("tune interrupted after %d evaluation(s)", st.Evaluations()))
	case tuneErr != nil:
		return withCode(ExitOther, tuneErr)
	case len(best.Cases) < len(st.Searches):
		return withCode(ExitFindings, fmt.Errorf("%d case(s) have no configuration that passed", len(st.Searches)-len(best.Cases)))
	}
	return nil
}

// tuneState resumes the saved search when --resume names a file that
// exists, and starts a new one otherwise.
func tuneState(f *tuneFlags, backend, variant, suiteSHA256 string) (*tune.State, error) {
	settings := tune.DefaultSettings()
	settings.Population = f.population
	if f.resume == "" {
		return tune.NewState(backend, variant, f.seed, suiteSHA256, settings), nil
	}
	st, err := tune.LoadState(f.resume)
	if errors.Is(err, fs.ErrNotExist) {
		return tune.NewState(backend, variant, f.seed, suiteSHA256, settings), nil
	}
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("--resume: %w", err))
	}
	if why := st.Matches(backend, variant, suiteSHA256); why != "" {
		return nil, withCode(ExitUsage, fmt.Errorf("--resume %s: %s", f.resume, why))
	}
	return st, nil
}

// chooseTuneVariant picks the variant named, or the first with tunables.
func chooseTuneVariant(d sdk.Description, name string) (sdk.Variant, error) {
	for _, v := range d.Variants {
		if (name == "" && len(v.Tunables) > 0) || v.Name == name {
			if len(v.Tunables) == 0 {
				return v, fmt.Errorf("variant %s of %s declares no tunables: there is nothing to search", v.Name, d.Name)
			}
			return v, nil
		}
	}
	names := make([]string, len(d.Variants))
	for i, v := range d.Variants {
		names[i] = v.Name
	}
	if name != "" {
		return sdk.Variant{}, fmt.Errorf("backend %s has no variant %q (it offers: %s)", d.Name, name, strings.Join(names, ", "))
	}
	return sdk.Variant{}, fmt.Errorf("backend %s declares no tunables in any variant (%s): there is nothing to search", d.Name, strings.Join(names, ", "))
}

// chooseCases keeps the suite's cases named in list, all when it is empty.
func chooseCases(s *suite.Suite, list string) ([]op.Case, error) {
	if list == "" {
		return s.Cases, nil
	}
	var out []op.Case
	for _, id := range splitList(list) {
		i := slices.IndexFunc(s.Cases, func(c op.Case) bool { return c.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("--cases: the suite %s has no case %q (%d cases; flashcore run names them)", s.Path, id, len(s.Cases))
		}
		out = append(out, s.Cases[i])
	}
	return out, nil
}
