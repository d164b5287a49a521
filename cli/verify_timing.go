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
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

const verifyTimingUsage = `flashcore verify-timing: our kernel times against Nsight Compute's

Usage:
  flashcore verify-timing [--suite FILE] [--backends a,b] [--l2 hot|cold] [--out DIR]

Runs the suite as ` + "`flashcore run`" + ` does, then runs each backend again under ncu
(--clock-control none, --cache-control none for hot or all for cold) and
compares, row by row, our median kernel time with the median over calls of
ncu's gpu__time_duration.sum, summed over the kernels of each call. A row
PASSes when |ours - ncu| <= max(2% of ncu, 0.5 µs). Results, ncu reports and
logs go to DIR (default flashcore-verify-timing). See docs/profiling.md.

Exit codes: 0 every GPU row PASSed, 1 a row FAILed the bound, 2 usage or
suite error, 3 a row has no figure (a plugin error, or ncu profiled none of
its calls), 4 other errors (ncu missing or not allowed to read the
counters), 130 interrupted.
`

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
	outDir := fs.String("out", "flashcore-verify-timing", "directory for the results, ncu reports and logs")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	mode := sdk.L2Mode(*l2)
	if mode != sdk.L2Hot && mode != sdk.L2Cold {
		return withCode(ExitUsage, fmt.Errorf("--l2 %q: want hot or cold", *l2))
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
	tool, err := ncu.Find()
	if err != nil {
		return withCode(ExitOther, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return withCode(ExitOther, err)
	}
	run, err := runner.Run(ctx, runner.Config{
		Suite: withL2(s, mode), Plugins: plugins, ResultsPath: filepath.Join(dir, "results.json"),
		Tool: results.Tool{Version: Version, GitCommit: GitCommit}, Progress: stderr,
		Command: "flashcore verify-timing " + strings.Join(args, " "),
	})
	if err != nil {
		return runError(err)
	}
	rows := timedRows(run, plugins, mode)
	if err := measureUnderNcu(ctx, tool, s, mode, rows, dir, stderr); err != nil {
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

func runError(err error) error {
	if errors.Is(err, runner.ErrInterrupted) {
		return withCode(ExitInterrupted, err)
	}
	return withCode(ExitOther, err)
}

// timedRows are the run's rows with our figure in mode; rows with nothing
// for ncu to check are SKIP already.
func timedRows(run *results.Run, plugins []host.Plugin, mode sdk.L2Mode) []*timedRow {
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
		reach, ok := ncu.ReachFor(timing.Method)
		if !ok {
			r.row.Verdict, r.row.Reason = ncu.Skip, fmt.Sprintf("timed by %s: no GPU kernel", timing.Method)
			continue
		}
		r.reach = reach
	}
	return rows
}

// measureUnderNcu runs the sessions that cover the rows still to check and
// judges each row. A session that fails leaves its rows ERROR with the
// reason; ncu refusing the counters stops everything.
func measureUnderNcu(ctx context.Context, tool ncu.Tool, s *suite.Suite, mode sdk.L2Mode, rows []*timedRow, dir string, progress io.Writer) error {
	set := ncuSettings{measure: ncu.TimingMeasure(string(mode))}
	for _, sess := range timingSessions(s, mode, rows) {
		fmt.Fprintf(progress, "ncu: %s (%d row(s))\n", sess.name, len(sess.rows))
		calls, _, err := runNcuSession(ctx, tool, sess.ncuSession, set, dir)
		if errors.Is(err, ncu.ErrNoPermission) || ExitCode(err) == ExitInterrupted {
			return withCode(ExitOther, err)
		}
		for _, r := range sess.members {
			if err != nil {
				r.row.Verdict, r.row.Reason = ncu.Error, err.Error()
				continue
			}
			r.row = ncu.CompareCalls(r.row.Backend, r.row.Row, r.row.OursNs, ncu.CallsOf(calls, r.row.Row))
		}
	}
	return nil
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
				suite: underNcu(s, mode, []suite.Case{c}, []suite.BackendSelection{rowSelection(r.result)}),
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

func containsCase(cases []suite.Case, id string) bool {
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
		return withCode(ExitFailures, fmt.Errorf("%d row(s) have no ncu figure, %d FAILed the bound", errored, failed))
	case failed > 0:
		return withCode(ExitFindings, fmt.Errorf("%d row(s) FAILed the bound against ncu", failed))
	}
	return nil
}
