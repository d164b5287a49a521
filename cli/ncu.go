package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// ncuSession is one run of one plugin under ncu: the plugin (or its Python
// worker) wrapped in ncu, over the cases and rows of suite.
type ncuSession struct {
	name   string // the report's file name, without .ncu-rep
	plugin host.Plugin
	reach  ncu.Reach
	suite  *suite.Suite
	rows   []ncu.RowKey
}

// ncuSettings are what a session's ncu measures and which launches it
// takes, and what more the plugin's environment holds.
type ncuSettings struct {
	measure ncu.Measure
	limit   ncu.Limit
	env     []string
}

// ncuOutcome is what one session under ncu gave: the calls ncu profiled,
// the report's path, and the session's own results (which kernel each row
// ran there; its figures are not used).
type ncuOutcome struct {
	calls  []ncu.Call
	report string
	run    *results.Run
}

// runNcuSession runs s under ncu. ncu's own failures (no permission) come
// back as the error; a session that profiled nothing returns no calls and
// no error.
func runNcuSession(ctx context.Context, tool ncu.Tool, s ncuSession, set ncuSettings, dir string) (ncuOutcome, error) {
	report := filepath.Join(dir, s.name)
	log := report + ".log"
	argv := tool.Profiling(s.reach, set.measure, set.limit, report, log)
	opts := host.Options{Env: append([]string{bridge.UnderProfilerEnv + "=1"}, set.env...)}
	if s.reach.Process == ncu.PluginProcess {
		opts.Wrapper = argv
	} else {
		opts.Env = append(opts.Env, bridge.WorkerWrapperEnv+"="+strings.Join(argv, " "))
	}
	run, runErr := runner.Run(ctx, runner.Config{Suite: s.suite, Plugins: []host.Plugin{s.plugin}, HostOptions: opts})
	if ctx.Err() != nil {
		return ncuOutcome{}, withCode(ExitInterrupted, fmt.Errorf("%w: %v", runner.ErrInterrupted, ctx.Err()))
	}
	if err := ncu.CheckLog(log); err != nil {
		return ncuOutcome{}, err
	}
	if runErr != nil {
		return ncuOutcome{}, fmt.Errorf("run %s under ncu: %w", s.plugin.Name, runErr)
	}
	calls, err := sessionCalls(ctx, tool, s, report+".ncu-rep")
	return ncuOutcome{calls: calls, report: report + ".ncu-rep", run: run}, err
}

// sessionCalls reads the report and groups its kernels into calls: by
// their NVTX call ranges, or, where kernels carry no row (the Go CUDA
// plugins before they marked calls), one call per kernel of the session's only row.
func sessionCalls(ctx context.Context, tool ncu.Tool, s ncuSession, report string) ([]ncu.Call, error) {
	kernels, err := tool.Import(ctx, report, false)
	if err != nil {
		return nil, err
	}
	if !s.reach.NVTX {
		return ncu.CallsOneEach(kernels, s.rows[0]), nil
	}
	renamed, err := tool.Import(ctx, report, true)
	if err != nil {
		return nil, err
	}
	return ncu.CallsByRange(kernels, renamed)
}

// underNcu is s cut down for a run under ncu, which serialises every
// kernel it profiles and spends milliseconds on each: a few warm-up runs
// and samples in mode l2 alone, one checked run, and only the given cases.
// The samples span as many placements of the buffers as the suite's (at
// most one per two samples), so that ncu's median, like the run's it is
// checked against, is taken over placements rather than in one
// (docs/measurement.md#placements). The run's own figures are not used;
// ncu's are.
func underNcu(s *suite.Suite, l2 sdk.L2Mode, cases []op.Case, backends []suite.BackendSelection) *suite.Suite {
	cut := *s
	cut.Cases = cases
	cut.Backends = backends
	cut.L2Modes = []sdk.L2Mode{l2}
	cut.Measurement = sdk.Measurement{WarmupRuns: 2, MinSamples: 10, MaxSamples: 10, TimeCap: time.Minute, L2: l2, CallSamples: 1,
		Placements: min(sdk.Placements(s.Measurement), 5)}
	cut.Check.Repeat = 1
	cut.CallTimeout = max(s.CallTimeout, 10*time.Minute)
	return &cut
}

// withL2 is s measuring mode l2 only.
func withL2(s *suite.Suite, l2 sdk.L2Mode) *suite.Suite {
	only := *s
	only.L2Modes = []sdk.L2Mode{l2}
	only.Measurement.L2 = l2
	return &only
}

// rowSelection selects exactly the row of r.
func rowSelection(r results.Result) suite.BackendSelection {
	sel := suite.BackendSelection{Name: r.Backend, Variants: []string{r.Variant}}
	if len(r.Tunables) > 0 {
		sel.Tunables = map[string][]string{}
		for k, v := range r.Tunables {
			sel.Tunables[k] = []string{v}
		}
	}
	return sel
}

func rowKey(r results.Result) ncu.RowKey { return ncu.RowKey{CaseID: r.CaseID, Label: r.Label} }

func caseOf(s *suite.Suite, id string) (op.Case, bool) {
	for _, c := range s.Cases {
		if c.ID == id {
			return c, true
		}
	}
	return op.Case{}, false
}

var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName makes a report name of parts: "ncu-cuda-v8-b1-h8-s512-d64-fp16".
func fileName(parts ...string) string {
	return unsafeInName.ReplaceAllString(strings.Join(parts, "-"), "_")
}

// checkOutDir refuses an output directory the worker wrapper could not
// carry: FLASHCORE_WORKER_WRAPPER is split on white space.
func checkOutDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(abs, " \t\n") {
		return "", fmt.Errorf("--out %q: the directory's path may not contain white space (ncu's report path travels in $%s)", abs, bridge.WorkerWrapperEnv)
	}
	return abs, nil
}
