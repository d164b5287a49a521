package ncu

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
)

// WriteTiming writes verify-timing's table: one line per row, our figure,
// ncu's, their ratio and the verdict at the bound.
func WriteTiming(w io.Writer, l2 string, rows []TimingRow) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "Kernel time against a reference  ·  L2 %s  ·  PASS when |flashcore − reference| ≤ max(%g%% of reference, %s)\n",
		l2, 100*RelBound, cell.Duration(AbsBoundNs))
	t := table.Grid{
		Header: []string{"Backend", "Row", "Case", "flashcore", "Reference", "By", "Ratio", "Calls", "Verdict"},
		Right:  []bool{false, false, false, true, true, false, true, true, false},
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.Backend, r.Row.Label, r.Row.CaseID, durationOrMissing(r.OursNs),
			durationOrMissing(r.RefNs), referenceCell(r), ratioCell(r.Ratio()), callsCell(r), verdictCell(r)})
	}
	if err := table.Draw(&out, t, false); err != nil {
		return err
	}
	fmt.Fprintf(&out, "%s\n", timingSummary(rows))
	_, err := w.Write(out.Bytes())
	return err
}

func durationOrMissing(ns float64) string {
	if ns <= 0 {
		return cell.Missing
	}
	return cell.Duration(ns)
}

func ratioCell(x float64) string {
	if math.IsNaN(x) {
		return cell.Missing
	}
	return fmt.Sprintf("%.3f", x)
}

func referenceCell(r TimingRow) string {
	if r.Reference == "" {
		return cell.Missing
	}
	return r.Reference
}

func callsCell(r TimingRow) string {
	if r.Calls == 0 {
		return cell.Missing
	}
	if r.KernelsPerCall == 1 {
		return fmt.Sprint(r.Calls)
	}
	unit := "kernels"
	if r.Reference == ReferenceCupti {
		unit = "activities"
	}
	return fmt.Sprintf("%d × %d %s", r.Calls, r.KernelsPerCall, unit)
}

func verdictCell(r TimingRow) string {
	if r.Reason == "" {
		return string(r.Verdict)
	}
	return string(r.Verdict) + ": " + r.Reason
}

func timingSummary(rows []TimingRow) string {
	counts := map[Verdict]int{}
	for _, r := range rows {
		counts[r.Verdict]++
	}
	var parts []string
	for _, v := range []Verdict{Pass, Fail, Error, Skip} {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	if len(parts) == 0 {
		return "no rows"
	}
	return strings.Join(parts, ", ")
}

// ProfiledCall is one call of a row as profile shows it.
type ProfiledCall struct {
	Backend string
	Call    Call
	Kernels []KernelProfile
}

// WriteProfile writes profile's tables: for each kernel of the call, its
// figures with the ncu metric each came from, its top stall reasons and
// the hints it triggers.
func WriteProfile(w io.Writer, c ProfiledCall, reportPath string) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s  ·  %s  ·  %s\n", c.Backend, c.Call.Row.Label, c.Call.Row.CaseID)
	if d, ok := c.Call.DurationNs(); ok && len(c.Kernels) > 1 {
		fmt.Fprintf(&out, "one call: %d kernels, %s in all\n", len(c.Kernels), durationOrMissing(d))
	}
	for i, k := range c.Kernels {
		fmt.Fprintf(&out, "\nkernel %d of %d: %s\n", i+1, len(c.Kernels), k.Kernel.Name)
		if err := writeKernelTable(&out, k); err != nil {
			return err
		}
		writeHints(&out, k.Hints)
	}
	fmt.Fprintf(&out, "\nncu report: %s\n", reportPath)
	_, err := w.Write(out.Bytes())
	return err
}

// topStalls is how many stall reasons the table lists.
const topStalls = 3

func writeKernelTable(out io.Writer, k KernelProfile) error {
	t := table.Grid{Header: []string{"Figure", "Value", "ncu metric"}, Right: []bool{false, true, false}}
	for _, f := range k.Figures {
		t.Rows = append(t.Rows, []string{f.Reading.Name, figureCell(f), metricCell(f.Metric)})
	}
	if l := k.Limiter; l != nil {
		t.Rows = append(t.Rows, []string{"Occupancy limiter", fmt.Sprintf("%s (%g blocks/SM)", l.Cause, l.Blocks), l.Metric})
	}
	for i, s := range k.Stalls[:min(topStalls, len(k.Stalls))] {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("Stall %d: %s", i+1, s.Reason),
			fmt.Sprintf("%.0f%% (%.2f cycles/issue)", 100*s.Share, s.PerIssue), s.Metric})
	}
	return table.Draw(out, t, false)
}

func figureCell(f Figure) string {
	if f.Metric == "" || math.IsNaN(f.Value) {
		return cell.Missing
	}
	switch f.Reading.Unit {
	case percent:
		return fmt.Sprintf("%.1f%%", f.Value)
	case nanoseconds:
		return cell.Duration(f.Value)
	case bytesUnit:
		return bytesCell(f.Value)
	}
	return fmt.Sprintf("%.4g", f.Value)
}

func bytesCell(b float64) string {
	if b >= 1024 {
		return fmt.Sprintf("%.1f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f B", b)
}

func metricCell(m string) string {
	if m == "" {
		return "(not in the report)"
	}
	return m
}

func writeHints(out io.Writer, hs []Hint) {
	if len(hs) == 0 {
		fmt.Fprintln(out, "hints: none; no metric crossed a threshold of docs/profiling.md")
		return
	}
	fmt.Fprintln(out, "hints:")
	for _, h := range hs {
		fmt.Fprintf(out, "  - %s: %s %s %s (%s). %s\n", h.Name, h.Source, h.Observed, h.Condition, h.Metric, h.Advice)
	}
}
