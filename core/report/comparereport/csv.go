package comparereport

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"github.com/flashcore/bench/core/compare"
)

// comparisonCSVHeader lists the columns of one record: a row of a later run ("new")
// set against the first run ("old"). In an ablation each later run has
// its own records, all against the first run.
var comparisonCSVHeader = []string{
	"case_id", "row", "backend", "old_label", "new_label", "old_status", "new_status",
	"old_median_ns", "old_rel_noise", "old_n", "new_median_ns", "new_rel_noise", "new_n",
	"old_sm_clock_mhz", "new_sm_clock_mhz",
	"rule", "ratio", "ratio_low", "ratio_high", "p_value", "threshold", "verdict", "detail", "old_reason", "new_reason",
}

func writeComparisonCSV(w io.Writer, c *compare.Comparison) error {
	out := csv.NewWriter(w)
	if err := out.Write(comparisonCSVHeader); err != nil {
		return err
	}
	for _, r := range c.Rows {
		for i, ch := range r.Changes {
			if ch.Verdict == compare.Absent {
				continue
			}
			if err := out.Write(comparisonCSVRecord(c, r, i+1, ch)); err != nil {
				return err
			}
		}
	}
	out.Flush()
	return out.Error()
}

func comparisonCSVRecord(c *compare.Comparison, r compare.Row, run int, ch compare.Change) []string {
	old, later := r.Measures[0], r.Measures[run]
	record := []string{r.CaseID, r.Name, r.Backend, c.Runs[0].Label, c.Runs[run].Label,
		csvStatus(old), csvStatus(later)}
	record = append(record, csvKnown(old.KernelNs), csvKnown(old.RelNoise), csvCount(old),
		csvKnown(later.KernelNs), csvKnown(later.RelNoise), csvCount(later))
	record = append(record, csvClock(old.SMClockMHz), csvClock(later.SMClockMHz))
	record = append(record, string(ch.Rule), csvKnown(ch.Ratio), csvKnown(ch.Low), csvBound(ch.High), csvKnown(ch.PValue),
		csvKnown(ch.Threshold), string(ch.Verdict), ch.Detail)
	return append(record, csvReason(old), csvReason(later))
}

// csvCount is the number of kernel samples the row recorded; "" when the
// run has no such row or it was not timed.
func csvCount(m compare.Measure) string {
	if m.Result == nil || m.N == 0 {
		return ""
	}
	return strconv.Itoa(m.N)
}

func csvClock(mhz float64) string {
	if mhz <= 0 {
		return ""
	}
	return csvKnown(mhz)
}

// csvBound writes an interval's upper end: "inf" when the rows could not
// bound the ratio, apart from "" for a pair with no interval at all.
func csvBound(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return csvKnown(x)
}

// csvStatus is the row's status; "" when the run has no such row.
func csvStatus(m compare.Measure) string {
	if m.Result == nil {
		return ""
	}
	return string(m.Result.Status)
}

func csvReason(m compare.Measure) string {
	if m.Result == nil {
		return ""
	}
	return m.Result.Reason
}
