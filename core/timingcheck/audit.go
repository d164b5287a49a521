package timingcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/underncu"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

// The timing audit of flashcore run (docs/measurement.md, "The timing
// audit"). Every time in a row comes from the plugin. The host's own clock
// (core/runner, clock.go) catches a lie only where the lied-about time is
// larger than what an honest call costs the host around its kernel, which
// on a GPU is milliseconds. So, on a GPU, after the run, the host picks a
// few rows of each backend whose timing code is not this flashcore's, at
// random and after the fact, and runs each again under Nsight Compute,
// which reads the device's own duration of every kernel. A row whose
// reported time is well below what ncu measured, or for which ncu measured
// nothing, or which does not PASS under ncu, is an ERROR ("audit: ..."),
// with no speedup.
//
// The bound is one-sided: a backend that reports more than its kernels
// took harms only itself. Reporting less than the device's time by more
// than AuditRelSlack, plus AuditPerKernelSlackNs for each kernel of a call
// (ncu reads about 1 µs more per kernel than CUPTI does), is flagged.

// AuditRelSlack and AuditPerKernelSlackNs bound how far below ncu's
// median a backend's median kernel time may be: ours ≥ ncu × (1 −
// AuditRelSlack) − kernels × AuditPerKernelSlackNs. verify-timing's honest
// rows agree with ncu within 2% (ncu.RelBound); this is far wider, so an
// honest row is never flagged, and a clock divided by 1.3 or more is.
const (
	AuditRelSlack         = 0.2
	AuditPerKernelSlackNs = 1500
)

// DefaultAuditRows is how many rows of each untrusted backend flashcore
// run audits by default.
const DefaultAuditRows = 2

// Trusted reports whether p's timing is this flashcore's own code: a
// plugin binary shipped beside executable, running no code of the user's
// in its process. A py: file runs inside the shipped bridge's Python
// worker, where it could replace the worker's clock, so it is not trusted;
// a cu: file's code runs on the device only, timed by the shipped CUDA
// plugin, so it is.
func Trusted(p host.Plugin, executable string) bool {
	return p.PythonFile == "" && shippedBeside(executable, p.Path)
}

// AuditRows picks, from the run's PASSed rows of the GPU backends that are
// not Trusted, up to perBackend rows each at random, and says how ncu
// reaches each. rng chooses; pass one seeded from the operating system so
// that no plugin can know which rows will be audited.
//
// Every GPU row that the host's clock alone refused (clockFlagged) is
// taken as well, of any backend: the audit is what reconciles it.
func AuditRows(run *results.Run, plugins []host.Plugin, executable string, perBackend int, rng *rand.Rand) []*Row {
	if perBackend <= 0 {
		return nil
	}
	byName := map[string]host.Plugin{}
	for _, p := range plugins {
		byName[p.Name] = p
	}
	onGPU := map[string]bool{}
	for _, b := range run.Backends {
		onGPU[b.Name] = b.Device.Kind == "gpu"
	}
	candidates := map[string][]*Row{}
	flagged := map[string][]*Row{}
	var order []string
	for _, res := range run.Results {
		p, ok := byName[res.Backend]
		if !ok || !onGPU[res.Backend] {
			continue
		}
		refusedByClock := clockFlagged(res)
		if !refusedByClock && (Trusted(p, executable) || res.Status != results.StatusPass) {
			continue
		}
		mode, timing, ok := auditTiming(res)
		if !ok {
			continue
		}
		if _, seen := candidates[res.Backend]; !seen {
			if _, seen := flagged[res.Backend]; !seen {
				order = append(order, res.Backend)
			}
		}
		row := &Row{
			Result: res, Plugin: p, Reach: auditReach(p, timing.Method), mode: mode,
			Check: ncu.TimingRow{Backend: res.Backend, Row: underncu.RowKey(res), OursNs: timing.Kernel.MedianNs},
		}
		if refusedByClock {
			row.byClock = true
			flagged[res.Backend] = append(flagged[res.Backend], row)
		} else {
			candidates[res.Backend] = append(candidates[res.Backend], row)
		}
	}
	var rows []*Row
	for _, name := range order {
		c := candidates[name]
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		// Every row the host's clock alone refused, and up to perBackend
		// of the rest.
		chosen := append(flagged[name], c[:min(perBackend, len(c))]...)
		// The run's order, so that sessions and progress read as the run did.
		slices.SortFunc(chosen, func(a, b *Row) int { return indexOf(run, a) - indexOf(run, b) })
		rows = append(rows, chosen...)
	}
	return rows
}

// clockFlagged reports whether res is a row on a GPU that PASSed its
// checks and that the host's clock alone refused (results.HostClockFact).
// On a GPU the host's clock cannot tell a lie from a call whose host side
// outweighs its kernels, so the device's clock decides: the audit measures
// every such row under ncu, of any backend, ours included.
func clockFlagged(res results.Result) bool {
	return res.Status == results.StatusError && res.Facts[results.HostClockFact] == results.HostClockRefused &&
		strings.HasPrefix(res.Reason, runner.ClockReasonPrefix)
}

// auditTiming is the timing of res the audit checks: the hot one, else
// the cold one (ncu runs with --cache-control none or all to match).
func auditTiming(res results.Result) (sdk.L2Mode, results.Timing, bool) {
	for _, mode := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
		if t, ok := res.TimingFor(mode); ok && t.Kernel.N > 0 {
			return mode, t, true
		}
	}
	return "", results.Timing{}, false
}

// auditReach is how ncu reaches an untrusted row. A py: file's calls are
// the shipped worker's, which marks them with NVTX; another plugin is
// reached by the method it claims where that is one this flashcore knows,
// and otherwise as a whole process whose every kernel is counted (one row
// per session). A plugin cannot hide from the audit by naming another
// method: what ncu does not see is a row with no figure, and flagged.
func auditReach(p host.Plugin, method string) ncu.Reach {
	if p.PythonFile != "" {
		return ncu.Reach{Process: ncu.WorkerProcess, NVTX: true}
	}
	if reach, ok := ncu.ReachFor(method); ok && reach.Process == ncu.PluginProcess {
		return reach
	}
	return ncu.Reach{Process: ncu.PluginProcess}
}

func indexOf(run *results.Run, r *Row) int {
	for i := range run.Results {
		if run.Results[i].CaseID == r.Result.CaseID && run.Results[i].Backend == r.Result.Backend && run.Results[i].Label == r.Result.Label {
			return i
		}
	}
	return len(run.Results)
}

// AuditFinding is why an audited row cannot be reconciled with what ncu
// measured; "" when it can.
func AuditFinding(check ncu.TimingRow) string {
	switch check.Verdict {
	case ncu.Error:
		return "ncu measured no figure for it: " + check.Reason
	case ncu.Skip:
		return ""
	}
	floor := check.RefNs*(1-AuditRelSlack) - float64(max(check.KernelsPerCall, 1))*AuditPerKernelSlackNs
	if check.OursNs >= floor {
		return ""
	}
	return fmt.Sprintf("the backend reported %s a call; ncu measured %s (median of %d calls, %d kernel(s) each), "+
		"and an honest report is at least %s", dur(check.OursNs), dur(check.RefNs), check.Calls, check.KernelsPerCall, dur(max(floor, 0)))
}

func dur(ns float64) string { return time.Duration(ns).Round(10 * time.Nanosecond).String() }

// Audit runs ncu over rows (from AuditRows), writing reports and logs into
// dir and a line per session to progress, and records each row's outcome
// in run: facts audit_* on every audited row, and ERROR "audit: ..." on a
// row it flags. It returns how many rows it flagged. ncu refusing the
// counters, or an interrupt, leaves the rows as they were and is the
// error.
func Audit(ctx context.Context, tool ncu.Tool, s *suite.Suite, run *results.Run, rows []*Row, dir string, progress io.Writer) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	for _, mode := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
		ofMode := slices.DeleteFunc(slices.Clone(rows), func(r *Row) bool { return r.mode != mode })
		set := underncu.Settings{Measure: ncu.TimingMeasure(string(mode)), Env: AuditRunEnv()}
		for _, sess := range sessions(s, mode, ofMode) {
			sess.Name = "audit-" + sess.Name
			fmt.Fprintf(progress, "audit: ncu on %s (%d row(s), %s L2)\n", sess.Plugin.Name, len(sess.Rows), mode)
			outcome, err := underncu.Run(ctx, tool, sess.Session, set, dir)
			if errors.Is(err, ncu.ErrNoPermission) || errors.Is(err, runner.ErrInterrupted) {
				return 0, err
			}
			for _, r := range sess.members {
				r.Check = judge(r, outcome, err)
				r.Report = outcome.Report
			}
		}
	}
	flagged := 0
	for _, r := range rows {
		i := indexOf(run, r)
		if i == len(run.Results) {
			continue
		}
		res := &run.Results[i]
		if res.Facts == nil {
			res.Facts = map[string]string{}
		}
		res.Facts["audit_reference"] = ncu.ReferenceNcu
		res.Facts["audit_ncu_ns"] = strconv.FormatFloat(r.Check.RefNs, 'f', 0, 64)
		res.Facts["audit_calls"] = strconv.Itoa(r.Check.Calls)
		if r.Report != "" {
			res.Facts["audit_report"] = r.Report
		}
		finding := AuditFinding(r.Check)
		res.Facts["audit_verdict"] = "agrees"
		if finding != "" {
			res.Facts["audit_verdict"] = "flagged"
			flagged++
		}
		switch {
		case r.byClock && clockFlagged(*res):
			reconcileClock(res, r.Check, finding)
		case finding != "" && res.Status == results.StatusPass:
			res.Status, res.Reason = results.StatusError, "audit: "+finding+" (docs/measurement.md, \"The timing audit\")"
		}
	}
	return flagged, nil
}

// reconcileClock settles a row the host's clock alone refused by what ncu
// measured. Where the device's own clock confirms the time the backend
// reported (an ncu figure, and no finding), its output and its kernel time
// stand and the row PASSes again, host-bound (results.HostBound): with a
// warning, and no speedup, since timing alone cannot tell a call whose
// host side outweighs its kernels from work done off the GPU beside a
// kernel of the right length. Where ncu does not confirm it, the row stays
// an ERROR and says what ncu saw.
func reconcileClock(res *results.Result, check ncu.TimingRow, finding string) {
	measured := check.Verdict != ncu.Error && check.Verdict != ncu.Skip && check.RefNs > 0 && check.Calls > 0
	if !measured || finding != "" {
		if finding == "" {
			finding = "ncu gave no figure to reconcile it with: " + capReason(check.Reason)
		}
		res.Reason += "; and the timing audit: " + finding
		res.Facts[results.HostClockFact] = results.HostClockConfirmed
		return
	}
	res.Facts[results.HostClockFact] = results.HostClockReconciled
	res.Facts["host_clock_reason"] = res.Reason
	res.Diagnostics = append(res.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
		Summary: "host-bound calls, no speedup: each call cost the host far more than its kernels (" + dur(check.OursNs) +
			", which ncu confirmed at " + dur(check.RefNs) + "); the host cannot tell a host-bound call from work done off the GPU",
		Detail: res.Reason})
	res.Status, res.Reason = results.StatusPass, ""
}

// AuditRunEnv is what flashcore run adds to every plugin's environment,
// in the run and under ncu, so that a row audited later runs the kernel
// it ran: Triton's autotuner keeps its choices in the plugin's cache
// directory (TRITON_CACHE_DIR, which the host points there, under ncu
// too). Under ncu, whose interception of every launch distorts timings, a
// fresh autotuning would choose another configuration: on an H200, an
// autotuned py: file's 6.3 µs kernel was 15 µs under ncu when the
// plugin's cache was not there.
func AuditRunEnv() []string { return []string{"TRITON_CACHE_AUTOTUNING=1"} }

// AuditSummary is the run header's line about the audit of rows.
func AuditSummary(rows []*Row, flagged, perBackend int, why error) string {
	switch {
	case why != nil:
		return "not done: " + why.Error()
	case len(rows) == 0:
		return ""
	}
	byClock := 0
	for _, r := range rows {
		if r.byClock {
			byClock++
		}
	}
	line := fmt.Sprintf("ncu on %d row(s) chosen at random (up to %d per backend whose timing is not flashcore's own)", len(rows)-byClock, perBackend)
	if byClock > 0 {
		line += fmt.Sprintf(" and %d the host's clock refused", byClock)
	}
	return line + fmt.Sprintf(", %d flagged", flagged)
}
