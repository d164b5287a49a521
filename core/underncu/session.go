// Package underncu runs a suite's rows under NVIDIA Nsight Compute (ncu):
// one session is one plugin (or its Python worker) wrapped in ncu, over a
// suite cut down for profiling. `flashcore profile` runs one session for
// one row; verify-timing (core/timingcheck) runs one per plugin or row.
// What ncu measured is read by internal/ncu.
//
// Where to start: Session and Run. CutSuite makes a session's suite,
// RowSelection and RowKey name the one row a session is about.
package underncu

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

// Session is one run of one plugin under ncu: the plugin (or its Python
// worker) wrapped in ncu, over the cases and rows of Suite.
type Session struct {
	Name   string // the report's file name, without .ncu-rep
	Plugin host.Plugin
	Reach  ncu.Reach
	Suite  *suite.Suite
	Rows   []ncu.RowKey
}

// Settings are what a session's ncu measures and which launches it
// takes, and what more the plugin's environment holds.
type Settings struct {
	Measure ncu.Measure
	Limit   ncu.Limit
	Env     []string
}

// Outcome is what one session under ncu gave: the calls ncu profiled,
// the report's path, and the session's own results (which kernel each row
// ran there; its figures are not used).
type Outcome struct {
	Calls  []ncu.Call
	Report string
	Run    *results.Run
}

// Run runs s under ncu, writing the report and its log into dir. ncu's
// own failures (no permission: ncu.ErrNoPermission) come back as the
// error, and so does an interrupt, wrapping runner.ErrInterrupted; a
// session that profiled nothing returns no calls and no error.
func Run(ctx context.Context, tool ncu.Tool, s Session, set Settings, dir string) (Outcome, error) {
	report := filepath.Join(dir, s.Name)
	log := report + ".log"
	argv := tool.Profiling(s.Reach, set.Measure, set.Limit, report, log)
	opts := host.Options{Env: append([]string{bridge.UnderProfilerEnv + "=1"}, set.Env...)}
	if s.Reach.Process == ncu.PluginProcess {
		opts.Wrapper = argv
	} else {
		// The plugin starts ncu itself, which writes the report here.
		opts.Env = append(opts.Env, bridge.WorkerWrapperEnv+"="+strings.Join(argv, " "))
		opts.Profiled = true
	}
	run, runErr := runner.Run(ctx, runner.Config{Suite: s.Suite, Plugins: []host.Plugin{s.Plugin}, HostOptions: opts, UnderProfiler: true})
	if ctx.Err() != nil {
		return Outcome{}, fmt.Errorf("%w: %v", runner.ErrInterrupted, ctx.Err())
	}
	if err := ncu.CheckLog(log); err != nil {
		return Outcome{}, err
	}
	if runErr != nil {
		return Outcome{}, fmt.Errorf("run %s under ncu: %w", s.Plugin.Name, runErr)
	}
	calls, err := sessionCalls(ctx, tool, s, report+".ncu-rep")
	return Outcome{Calls: calls, Report: report + ".ncu-rep", Run: run}, err
}

// sessionCalls reads the report and groups its kernels into calls: by
// their NVTX call ranges, or, where kernels carry no row (the Go CUDA
// plugins before they marked calls), one call per kernel of the session's only row.
func sessionCalls(ctx context.Context, tool ncu.Tool, s Session, report string) ([]ncu.Call, error) {
	kernels, err := tool.Import(ctx, report, false)
	if err != nil {
		return nil, err
	}
	if !s.Reach.NVTX {
		return ncu.CallsOneEach(kernels, s.Rows[0]), nil
	}
	renamed, err := tool.Import(ctx, report, true)
	if err != nil {
		return nil, err
	}
	return ncu.CallsByRange(kernels, renamed)
}

// CutSuite is s cut down for a run under ncu, which serialises every
// kernel it profiles and spends milliseconds on each: a few warm-up runs
// and samples in mode l2 alone, one checked run, and only the given cases.
// The samples span as many placements of the buffers as the suite's (at
// most one per two samples), so that ncu's median, like the run's it is
// checked against, is taken over placements rather than in one
// (docs/measurement.md#placements). The run's own figures are not used;
// ncu's are.
func CutSuite(s *suite.Suite, l2 sdk.L2Mode, cases []op.Case, backends []suite.BackendSelection) *suite.Suite {
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

// RowSelection selects exactly the row of r.
func RowSelection(r results.Result) suite.BackendSelection {
	sel := suite.BackendSelection{Name: r.Backend, Variants: []string{r.Variant}}
	if len(r.Tunables) > 0 {
		sel.Tunables = map[string][]string{}
		for k, v := range r.Tunables {
			sel.Tunables[k] = []string{v}
		}
	}
	return sel
}

// RowKey is how ncu's calls name the row of r.
func RowKey(r results.Result) ncu.RowKey { return ncu.RowKey{CaseID: r.CaseID, Label: r.Label} }

var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// FileName makes a report name of parts: "ncu-cuda-v8-b1-h8-s512-d64-fp16".
func FileName(parts ...string) string {
	return unsafeInName.ReplaceAllString(strings.Join(parts, "-"), "_")
}
