package gate

import (
	"fmt"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
)

// Name is one gate.
type Name string

// The gates, in the order tables show them.
const (
	Correctness Name = "correctness"
	Determinism Name = "determinism"
	Stability   Name = "stability"
	Registers   Name = "registers"
	Spills      Name = "spills"
	SharedMem   Name = "shared memory"
	Occupancy   Name = "occupancy"
)

// Names lists every gate in table order.
var Names = []Name{Correctness, Determinism, Stability, Registers, Spills, SharedMem, Occupancy}

// Verdict is one gate's judgement of one row.
type Verdict string

const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
	// NotJudged: the row lacks the figure (skipped, not a CUDA backend) or
	// the suite sets no limit.
	NotJudged Verdict = "—"
)

// Judgement is one gate on one row: the verdict, the figure it read and
// the limit it held the figure to.
type Judgement struct {
	Gate    Name
	Verdict Verdict
	Figure  string // e.g. "96 per thread"; "" when not judged
	Limit   string // e.g. "≤ 128"
}

// Row is one row of the run with a judgement per gate, in Names order.
type Row struct {
	CaseID  string
	Backend string
	Label   string
	Status  results.Status
	Gates   []Judgement
}

// Failure is one failed gate, in words a CI log can show alone.
type Failure struct {
	Backend, CaseID, Label string
	Judgement
}

// String names backend, case, gate, figure and limit:
// "cuda-v8 on b1-h8-s512-d64-fp16: registers 96 per thread, limit ≤ 64".
func (f Failure) String() string {
	who := f.Backend
	if f.Label != "" && f.Label != f.Backend {
		who += " (" + f.Label + ")"
	}
	return fmt.Sprintf("%s on %s: %s %s, limit %s", who, f.CaseID, f.Gate, f.Figure, f.Limit)
}

// Outcome is a whole run judged.
type Outcome struct {
	Gates    suite.Gates
	Rows     []Row
	Failures []Failure
}

// Passed reports whether no gate failed.
func (o *Outcome) Passed() bool { return len(o.Failures) == 0 }

// Judged counts the rows at least one gate could judge.
func (o *Outcome) Judged() int {
	n := 0
	for _, r := range o.Rows {
		if r.Status != results.StatusSkip {
			n++
		}
	}
	return n
}

// Judge holds every row of run to the limits of g.
func Judge(run *results.Run, g suite.Gates) *Outcome {
	devices := map[string]string{}
	for _, b := range run.Backends {
		devices[b.Name] = b.Device.ComputeCapability
	}
	out := &Outcome{Gates: g}
	for i := range run.Results {
		res := &run.Results[i]
		row := Row{CaseID: res.CaseID, Backend: res.Backend, Label: res.Label, Status: res.Status}
		row.Gates = judgeRow(res, g, devices[res.Backend])
		for _, j := range row.Gates {
			if j.Verdict == Fail {
				out.Failures = append(out.Failures, Failure{Backend: res.Backend, CaseID: res.CaseID, Label: res.Label, Judgement: j})
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

func judgeRow(res *results.Result, g suite.Gates, computeCapability string) []Judgement {
	if res.Status == results.StatusSkip {
		out := make([]Judgement, len(Names))
		for i, n := range Names {
			out[i] = Judgement{Gate: n, Verdict: NotJudged}
		}
		return out
	}
	return []Judgement{
		correctness(res),
		determinism(res, g),
		stability(res, g),
		registers(res, g),
		spills(res, g),
		sharedMemory(res, g),
		occupancy(res, g, computeCapability),
	}
}

// nondeterministic reports whether the row FAILed only for differing
// between its checked runs, which is the determinism gate's to judge.
func nondeterministic(res *results.Result) bool {
	return res.Repeats != nil && res.Repeats.Differing > 0 && strings.HasPrefix(res.Reason, "nondeterministic")
}

func correctness(res *results.Result) Judgement {
	j := Judgement{Gate: Correctness, Limit: "the check passes"}
	switch {
	case res.Status == results.StatusError || res.Check == nil:
		j.Verdict = NotJudged
		return j
	case res.Status == results.StatusFail && !nondeterministic(res):
		j.Verdict, j.Figure = Fail, "FAIL ("+checkReason(res.Reason)+")"
		return j
	}
	j.Verdict, j.Figure = Pass, fmt.Sprintf("rel L2 %.1e", res.Check.RelL2Err)
	return j
}

func determinism(res *results.Result, g suite.Gates) Judgement {
	j := Judgement{Gate: Determinism, Limit: fmt.Sprintf("bit-identical over %d runs", g.Runs)}
	rep := res.Repeats
	if rep == nil || rep.Runs < 2 {
		j.Verdict = NotJudged
		return j
	}
	if rep.Differing == 0 {
		j.Verdict, j.Figure = Pass, fmt.Sprintf("%d runs identical", rep.Runs)
		return j
	}
	j.Verdict = Fail
	j.Figure = fmt.Sprintf("%d of %d runs differ from run 1, in up to %s: max |diff| %.3g (%s), rel L2 %.2g",
		rep.Differing, rep.Runs, plural(rep.DifferingElements, "element"), rep.MaxAbsDiff, plural(int(rep.MaxULPs), "ULP"), rep.RelL2Diff)
	return j
}

func stability(res *results.Result, g suite.Gates) Judgement {
	j := Judgement{Gate: Stability, Limit: fmt.Sprintf("%d runs, no crash, no NaN or Inf", g.Runs)}
	runs := 1
	if res.Repeats != nil {
		runs = res.Repeats.Runs
	}
	switch {
	case res.Status == results.StatusError:
		j.Verdict, j.Figure = Fail, fmt.Sprintf("ERROR after %d run(s): %s", runs, firstLine(res.Reason))
	case res.Repeats != nil && res.Repeats.NonFiniteRuns > 0:
		j.Verdict, j.Figure = Fail, fmt.Sprintf("%d of %d runs held NaN or Inf", res.Repeats.NonFiniteRuns, runs)
	case timedNonFinite(res):
		j.Verdict, j.Figure = Fail, "the output of a timed call held NaN or Inf"
	case res.Check == nil:
		j.Verdict = NotJudged
	default:
		j.Verdict, j.Figure = Pass, plural(runs, "run")
	}
	return j
}

func timedNonFinite(res *results.Result) bool {
	for _, c := range res.TimedChecks {
		if c.NaN+c.Inf > 0 {
			return true
		}
	}
	return false
}

// checkReason is the check's part of a FAIL row's reason: a refusal of
// its timing, which the runner appends, is no concern of correctness.
func checkReason(reason string) string {
	reason, _, _ = strings.Cut(firstLine(reason), "; and its timing was refused")
	return reason
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
