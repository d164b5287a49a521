package timingcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/underncu"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Measure runs the sessions that cover the rows still to check and
// judges each row, writing reports and logs into dir and a line per
// session to progress. A session that fails leaves its rows ERROR with
// the reason; ncu refusing the counters (ncu.ErrNoPermission) or an
// interrupt (runner.ErrInterrupted) stops everything and is the error.
func Measure(ctx context.Context, tool ncu.Tool, s *suite.Suite, mode sdk.L2Mode, rows []*Row, dir string, progress io.Writer) error {
	set := underncu.Settings{Measure: ncu.TimingMeasure(string(mode)), Env: AutotuneCacheEnv(dir)}
	for _, sess := range sessions(s, mode, rows) {
		fmt.Fprintf(progress, "ncu: %s (%d row(s))\n", sess.Name, len(sess.Rows))
		outcome, err := underncu.Run(ctx, tool, sess.Session, set, dir)
		if errors.Is(err, ncu.ErrNoPermission) || errors.Is(err, runner.ErrInterrupted) {
			return err
		}
		for _, r := range sess.members {
			r.Check = judge(r, outcome, err)
			r.Report = outcome.Report
		}
	}
	return nil
}

// judge is r's check against what its session under ncu gave.
func judge(r *Row, outcome underncu.Outcome, sessionErr error) ncu.TimingRow {
	c := r.Check
	if errors.Is(sessionErr, ncu.ErrNoKernel) {
		return ncu.Errored(c.Backend, c.Row, c.OursNs, ncu.ReferenceNcu,
			"its calls launched no GPU kernel under ncu, so no time it reports is a GPU kernel's")
	}
	if sessionErr != nil {
		return ncu.Errored(c.Backend, c.Row, c.OursNs, ncu.ReferenceNcu, sessionErr.Error())
	}
	if status, reason := statusUnderNcu(r.Result, outcome.Run); status != results.StatusPass {
		return ncu.Errored(c.Backend, c.Row, c.OursNs, ncu.ReferenceNcu,
			fmt.Sprintf("under ncu the row ended %s (%s): no comparable figure", status, capReason(reason)))
	}
	if changed := kernelChangedUnderNcu(r.Result, outcome.Run); changed != "" {
		return ncu.Errored(c.Backend, c.Row, c.OursNs, ncu.ReferenceNcu,
			"under ncu the row ran another kernel ("+changed+"): no comparable figure")
	}
	return ncu.CompareCalls(c.Backend, c.Row, c.OursNs, ncu.CallsOf(outcome.Calls, c.Row))
}

// capReason keeps a reason quoted inside another short enough that the
// row's own reason stays within the host's cap.
func capReason(reason string) string {
	capped, _ := untrusted.Cap(reason, 1<<10)
	return capped
}

// statusUnderNcu is the status, and its reason, of the row's run under
// ncu: a row that did not PASS there (a wrong output, a crash) gave ncu
// nothing to compare. A row missing from that run is PASS: its session
// error, if any, is judged already.
func statusUnderNcu(unprofiled results.Result, profiled *results.Run) (results.Status, string) {
	if profiled == nil {
		return results.StatusPass, ""
	}
	for i := range profiled.Results {
		p := &profiled.Results[i]
		if p.CaseID == unprofiled.CaseID && p.Label == unprofiled.Label {
			return p.Status, p.Reason
		}
	}
	return results.StatusPass, ""
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

// session is one ncu session and the rows it judges.
type session struct {
	underncu.Session
	members []*Row
}

// sessions group the rows into ncu sessions: one per plugin where
// NVTX ranges name each call's row, one per row where nothing does.
func sessions(s *suite.Suite, mode sdk.L2Mode, rows []*Row) []session {
	var out []session
	perPlugin := map[string]int{}
	for _, r := range rows {
		if r.Check.Verdict != "" {
			continue
		}
		c, _ := s.Case(r.Result.CaseID)
		if r.Reach.OneRowPerSession() {
			out = append(out, session{Session: underncu.Session{
				Name: underncu.FileName("ncu", r.Result.Label, r.Result.CaseID), Plugin: r.Plugin, Reach: r.Reach,
				Suite: underncu.CutSuite(s, mode, []op.Case{c}, []suite.BackendSelection{underncu.RowSelection(r.Result)}),
				Rows:  []ncu.RowKey{r.Check.Row}}, members: []*Row{r}})
			continue
		}
		i, ok := perPlugin[r.Plugin.Name]
		if !ok {
			i = len(out)
			perPlugin[r.Plugin.Name] = i
			out = append(out, session{Session: underncu.Session{
				Name: underncu.FileName("ncu", r.Plugin.Name), Plugin: r.Plugin, Reach: r.Reach,
				Suite: underncu.CutSuite(s, mode, nil, []suite.BackendSelection{s.Selection(r.Plugin.Name)})}})
		}
		sess := &out[i]
		sess.members = append(sess.members, r)
		sess.Rows = append(sess.Rows, r.Check.Row)
		addSelection(sess.Suite, r.Result)
		if _, listed := sess.Suite.Case(c.ID); !listed {
			sess.Suite.Cases = append(sess.Suite.Cases, c)
		}
	}
	return out
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
