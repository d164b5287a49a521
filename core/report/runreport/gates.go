package runreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/gate"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
)

// WriteGates draws a judged run: one row per result with a cell per gate,
// the limits applied, then every failure on a line of its own, naming
// backend, case, figure and limit (docs/loop.md).
func WriteGates(w io.Writer, o *gate.Outcome, markdown bool) error {
	t := table.Grid{Header: []string{"Case", "Backend", "Correct", "Deterministic", "Stable", "Registers", "Spills", "Shared mem", "Occupancy"}}
	for _, r := range o.Rows {
		cells := []string{r.CaseID, r.Label}
		for _, j := range r.Gates {
			cells = append(cells, gateCell(j))
		}
		t.Rows = append(t.Rows, cells)
	}
	if err := table.Draw(w, t, markdown); err != nil {
		return err
	}
	item := "  "
	if markdown {
		item = "- "
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Limits: %s.\n", limitsLine(o))
	if markdown {
		fmt.Fprintln(w)
	}
	switch {
	case o.Passed() && o.Judged() == 0:
		fmt.Fprintln(w, "No row ran: nothing was judged.")
		return nil
	case o.Passed():
		fmt.Fprintf(w, "Every gate passed on %d row(s).\n", o.Judged())
		return nil
	}
	fmt.Fprintf(w, "%d gate(s) FAILed:\n", len(o.Failures))
	if markdown {
		fmt.Fprintln(w)
	}
	for _, f := range o.Failures {
		fmt.Fprintf(w, "%sFAIL %s\n", item, f)
	}
	return nil
}

// gateCell is a verdict with its figure, short enough for a table; the
// long figures of a failed correctness, determinism or stability gate are
// left to the failure lines below the table.
func gateCell(j gate.Judgement) string {
	switch {
	case j.Verdict == gate.NotJudged && j.Figure == "":
		return cell.Missing
	case j.Verdict == gate.NotJudged:
		return j.Figure
	case j.Verdict == gate.Fail && (j.Gate == gate.Correctness || j.Gate == gate.Determinism || j.Gate == gate.Stability):
		return "FAIL"
	}
	return string(j.Verdict) + " " + j.Figure
}

func limitsLine(o *gate.Outcome) string {
	g := o.Gates
	parts := []string{fmt.Sprintf("%d runs per row", g.Runs)}
	add := func(name string, set bool, limit string) {
		if set {
			parts = append(parts, name+" "+limit)
		} else {
			parts = append(parts, name+" not judged")
		}
	}
	add("registers", g.MaxRegisters > 0, fmt.Sprintf("≤ %d per thread", g.MaxRegisters))
	add("spills", g.MaxSpillBytes >= 0, fmt.Sprintf("≤ %d B per thread", g.MaxSpillBytes))
	add("shared memory", g.MaxSharedBytes > 0, fmt.Sprintf("≤ %d B per block", g.MaxSharedBytes))
	add("occupancy", g.MinOccupancy > 0, fmt.Sprintf("≥ %.3g%% (theoretical)", 100*g.MinOccupancy))
	return strings.Join(parts, "; ")
}
