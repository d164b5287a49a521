package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/op"
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

// The reference choices of --reference.
const (
	referenceAuto = "auto"
)

// timedRow is a row of the unprofiled run with our figure and how ncu
// reaches it.
type timedRow struct {
	result results.Result
	row    ncu.TimingRow
	reach  ncu.Reach
	plugin host.Plugin
}

func verifyTimingCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify-timing", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, verifyTimingUsage) }
	suitePath := fs.String("suite", "", "suite TOML file (default: the embedded default suite)")
	backends := fs.String("backends", "", "comma-separated backends (default: the suite's, else all found)")
	l2 := fs.String("l2", "hot", "L2 mode to check: hot or cold")
	reference := fs.String("reference", referenceAuto, "auto, cupti or ncu")
	outDir := fs.String("out", "flashcore-verify-timing", "directory for the results, ncu reports and logs")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	mode := sdk.L2Mode(*l2)
	if mode != sdk.L2Hot && mode != sdk.L2Cold {
		return withCode(ExitUsage, fmt.Errorf("--l2 %q: want hot or cold", *l2))
	}
	switch *reference {
	case referenceAuto, ncu.ReferenceCupti, ncu.ReferenceNcu:
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
	env := autotuneCacheEnv(dir)
	if *reference != ncu.ReferenceNcu {
		env = append(env, sdk.TimingReferenceEnv+"="+sdk.TimingReferenceCUPTI)
	}
	run, err := runner.Run(ctx, runner.Config{
		Suite: withL2(s, mode), Plugins: plugins, ResultsPath: filepath.Join(dir, "results.json"),
		Tool: results.Tool{Version: Version, GitCommit: GitCommit}, Progress: stderr,
		Command:     "flashcore verify-timing " + strings.Join(args, " "),
		HostOptions: host.Options{Env: env},
	})
	if err != nil {
		return runError(err)
	}
	self, _ := os.Executable() // "" on error: no plugin counts as shipped
	rows := timedRows(run, plugins, mode, *reference, self)
	if noNcu != nil {
		for _, r := range rows {
			if r.row.Verdict == "" {
				r.row = ncu.Errored(r.row.Backend, r.row.Row, r.row.OursNs, ncu.ReferenceNcu, noNcu.Error())
			}
		}
	}
	set := ncuSettings{measure: ncu.TimingMeasure(string(mode)), env: autotuneCacheEnv(dir)}
	if err := measureUnderNcu(ctx, tool, s, mode, rows, set, dir, stderr); err != nil {
		return err
	}
	out := make([]ncu.TimingRow, len(rows))
	for i, r := range rows {
		out[i] = r.row
	}
	if err := ncu.WriteTiming(stdout, string(mode), out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "results, ncu reports and logs in %s\n", dir)
	return timingVerdict(out)
}

// autotuneCacheEnv makes Triton keep its autotuner's choices on disk in
// dir, so that every run of verify-timing, profiled or not, launches the
// configuration the first one chose: under ncu, whose interception of
// every launch distorts the autotuner's timings, it would choose another.
func autotuneCacheEnv(dir string) []string {
	return []string{"TRITON_CACHE_AUTOTUNING=1", "TRITON_CACHE_DIR=" + filepath.Join(dir, "triton-cache")}
}

func runError(err error) error {
	if errors.Is(err, runner.ErrInterrupted) {
		return withCode(ExitInterrupted, err)
	}
	return withCode(ExitOther, err)
}

// timedRows are the run's rows with our figure in mode, each judged at
// once against the CUPTI reference its run recorded, or left for ncu.
// Rows with nothing to check are SKIP already. executable is the running
// flashcore, beside which the shipped plugins lie.
func timedRows(run *results.Run, plugins []host.Plugin, mode sdk.L2Mode, reference, executable string) []*timedRow {
	byName := map[string]host.Plugin{}
	for _, p := range plugins {
		byName[p.Name] = p
	}
	var rows []*timedRow
	for _, res := range run.Results {
		r := &timedRow{result: res, plugin: byName[res.Backend],
			row: ncu.TimingRow{Backend: res.Backend, Row: rowKey(res)}}
		rows = append(rows, r)
		timing, ok := res.TimingFor(mode)
		if !ok || timing.Kernel.N == 0 {
			r.row.Verdict, r.row.Reason = ncu.Skip, fmt.Sprintf("not timed (%s)", res.Status)
			continue
		}
		r.row.OursNs = timing.Kernel.MedianNs
		_, hasCupti := timing.Facts[sdk.FactReferenceNs]
		_, cuptiFailed := timing.Facts[sdk.FactReferenceError]
		// The CUPTI reference is facts a backend reports about itself: it is
		// taken only from the plugins this flashcore ships, whose code
		// computes it (cudakit, the bridges' worker). Any other
		// backend is measured by ncu, from outside.
		shipped := shippedBeside(executable, r.plugin.Path)
		useCupti := (hasCupti || cuptiFailed) && shipped && reference != ncu.ReferenceNcu
		if useCupti {
			r.row = cuptiReferenceRow(r.row, timing.Facts)
			continue
		}
		if reference == ncu.ReferenceCupti {
			why := fmt.Sprintf("timed by %s: no CUPTI reference (try --reference ncu)", timing.Method)
			if (hasCupti || cuptiFailed) && !shipped {
				why = "not a plugin shipped with flashcore: a reference it reports about itself is not taken (try --reference ncu)"
			}
			r.row.Verdict, r.row.Reason = ncu.Skip, why
			continue
		}
		reach, ok := ncu.ReachFor(timing.Method)
		if !ok {
			r.row.Verdict, r.row.Reason = ncu.Skip, fmt.Sprintf("timed by %s: no GPU kernel", timing.Method)
			continue
		}
		r.reach = reach
	}
	return rows
}

// shippedBeside reports whether plugin runs this flashcore's own plugin
// code: it resolves to one of the shippedPluginBinaries in the directory
// of executable (both with links followed).
func shippedBeside(executable, plugin string) bool {
	exe, err1 := filepath.EvalSymlinks(executable)
	bin, err2 := filepath.EvalSymlinks(plugin)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, name := range shippedPluginBinaries {
		if bin == filepath.Join(filepath.Dir(exe), name) {
			return true
		}
	}
	return false
}

// shippedPluginBinaries are the multi-call binaries of the plugins built
// with flashcore (Makefile): the plugins that need no CUDA, the Python
// bridges among them, and the CUDA plugins.
var shippedPluginBinaries = []string{"flashcore-plugins", "flashcore-plugins-cuda"}

// cuptiReferenceRow judges row against the per-call CUPTI times in facts.
func cuptiReferenceRow(row ncu.TimingRow, facts map[string]string) ncu.TimingRow {
	if why := facts[sdk.FactReferenceError]; why != "" {
		return ncu.Errored(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti, why)
	}
	var calls []float64
	for _, field := range strings.Fields(facts[sdk.FactReferenceNs]) {
		ns, err := strconv.ParseFloat(field, 64)
		if err != nil || ns <= 0 {
			return ncu.Errored(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti,
				fmt.Sprintf("unreadable %s fact %q", sdk.FactReferenceNs, field))
		}
		calls = append(calls, ns)
	}
	activities := 0
	if k := facts[sdk.FactReferenceKernels]; k != "" {
		activities = len(strings.Split(k, "; "))
	}
	return ncu.CompareReference(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti, calls, activities)
}

// measureUnderNcu runs the sessions that cover the rows still to check and
// judges each row. A session that fails leaves its rows ERROR with the
// reason; ncu refusing the counters stops everything.
func measureUnderNcu(ctx context.Context, tool ncu.Tool, s *suite.Suite, mode sdk.L2Mode, rows []*timedRow, set ncuSettings, dir string, progress io.Writer) error {
	for _, sess := range timingSessions(s, mode, rows) {
		fmt.Fprintf(progress, "ncu: %s (%d row(s))\n", sess.name, len(sess.rows))
		outcome, err := runNcuSession(ctx, tool, sess.ncuSession, set, dir)
		if errors.Is(err, ncu.ErrNoPermission) || ExitCode(err) == ExitInterrupted {
			return withCode(ExitOther, err)
		}
		for _, r := range sess.members {
			if err != nil {
				r.row = ncu.Errored(r.row.Backend, r.row.Row, r.row.OursNs, ncu.ReferenceNcu, err.Error())
				continue
			}
			if changed := kernelChangedUnderNcu(r.result, outcome.run); changed != "" {
				r.row = ncu.Errored(r.row.Backend, r.row.Row, r.row.OursNs, ncu.ReferenceNcu,
					"under ncu the row ran another kernel ("+changed+"): no comparable figure")
				continue
			}
			r.row = ncu.CompareCalls(r.row.Backend, r.row.Row, r.row.OursNs, ncu.CallsOf(outcome.calls, r.row.Row))
		}
	}
	return nil
}

// kernelChangedUnderNcu names the identity facts (results.IdentityFacts)
// in which the row's run under ncu differs from its unprofiled run; "" when
// none does or the row is not in that run.
func kernelChangedUnderNcu(unprofiled results.Result, profiled *results.Run) string {
	if profiled == nil {
		return ""
	}
	for i := range profiled.Results {
		p := &profiled.Results[i]
		if p.CaseID == unprofiled.CaseID && p.Label == unprofiled.Label {
			var changed []string
			for _, ch := range unprofiled.IdentityChanges(p) {
				changed = append(changed, ch.String())
			}
			return strings.Join(changed, "; ")
		}
	}
	return ""
}

type timingSession struct {
	ncuSession
	members []*timedRow
}

// timingSessions group the rows into ncu sessions: one per plugin where
// NVTX ranges name each call's row, one per row where nothing does.
func timingSessions(s *suite.Suite, mode sdk.L2Mode, rows []*timedRow) []timingSession {
	var sessions []timingSession
	perPlugin := map[string]int{}
	for _, r := range rows {
		if r.row.Verdict != "" {
			continue
		}
		c, _ := caseOf(s, r.result.CaseID)
		if r.reach.OneRowPerSession() {
			sessions = append(sessions, timingSession{ncuSession: ncuSession{
				name: fileName("ncu", r.result.Label, r.result.CaseID), plugin: r.plugin, reach: r.reach,
				suite: underNcu(s, mode, []op.Case{c}, []suite.BackendSelection{rowSelection(r.result)}),
				rows:  []ncu.RowKey{r.row.Row}}, members: []*timedRow{r}})
			continue
		}
		i, ok := perPlugin[r.plugin.Name]
		if !ok {
			i = len(sessions)
			perPlugin[r.plugin.Name] = i
			sessions = append(sessions, timingSession{ncuSession: ncuSession{
				name: fileName("ncu", r.plugin.Name), plugin: r.plugin, reach: r.reach,
				suite: underNcu(s, mode, nil, []suite.BackendSelection{selectionFor(s, r.plugin.Name)})}})
		}
		sess := &sessions[i]
		sess.members = append(sess.members, r)
		sess.rows = append(sess.rows, r.row.Row)
		addSelection(sess.suite, r.result)
		if !containsCase(sess.suite.Cases, c.ID) {
			sess.suite.Cases = append(sess.suite.Cases, c)
		}
	}
	return sessions
}

// addSelection narrows a per-plugin session's backend selection to the
// variants of its rows (tunables stay as the suite chose them).
func addSelection(s *suite.Suite, r results.Result) {
	sel := &s.Backends[0]
	for _, v := range sel.Variants {
		if v == r.Variant {
			return
		}
	}
	sel.Variants = append(sel.Variants, r.Variant)
}

// selectionFor is the suite's selection of backend, its tunables kept and
// its variants left for addSelection to fill.
func selectionFor(s *suite.Suite, backend string) suite.BackendSelection {
	for _, b := range s.Backends {
		if b.Name == backend {
			b.Variants = nil
			return b
		}
	}
	return suite.BackendSelection{Name: backend}
}

func containsCase(cases []op.Case, id string) bool {
	_, ok := caseOf(&suite.Suite{Cases: cases}, id)
	return ok
}

// timingVerdict is the exit code of verify-timing: rows without a figure
// first, then rows outside the bound.
func timingVerdict(rows []ncu.TimingRow) error {
	var failed, errored int
	for _, r := range rows {
		switch r.Verdict {
		case ncu.Fail:
			failed++
		case ncu.Error:
			errored++
		}
	}
	switch {
	case errored > 0:
		return withCode(ExitFailures, fmt.Errorf("%d row(s) have no reference figure, %d FAILed the bound", errored, failed))
	case failed > 0:
		return withCode(ExitFindings, fmt.Errorf("%d row(s) FAILed the bound against their reference", failed))
	}
	return nil
}
