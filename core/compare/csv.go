package compare

import (
	"encoding/csv"
	"io"
	"strconv"
)

// csvHeader lists the columns of one record: a row of a later run ("new")
// set against the first run ("old"). In an ablation each later run has
// its own records, all against the first run.
var csvHeader = []string{
	"case_id", "row", "backend", "old_label", "new_label", "old_status", "new_status",
	"old_median_ns", "old_rel_noise", "new_median_ns", "new_rel_noise",
	"ratio", "noise", "noise_unknown", "threshold", "verdict", "detail", "old_reason", "new_reason",
}

func writeCSV(w io.Writer, c *Comparison) error {
	out := csv.NewWriter(w)
	if err := out.Write(csvHeader); err != nil {
		return err
	}
	for _, r := range c.Rows {
		for i, ch := range r.Changes {
			if ch.Verdict == Absent {
				continue
			}
			if err := out.Write(csvRecord(c, r, i+1, ch)); err != nil {
				return err
			}
		}
	}
	out.Flush()
	return out.Error()
}

func csvRecord(c *Comparison, r Row, run int, ch Change) []string {
	old, later := r.Measures[0], r.Measures[run]
	record := []string{r.CaseID, r.Name, r.Backend, c.Runs[0].Label, c.Runs[run].Label,
		csvStatus(old), csvStatus(later)}
	record = append(record, csvFloat(old.KernelNs), csvFloat(old.RelNoise), csvFloat(later.KernelNs), csvFloat(later.RelNoise))
	record = append(record, csvFloat(ch.Ratio), csvFloat(ch.Noise), strconv.FormatBool(ch.NoiseUnknown),
		csvFloat(c.Threshold), string(ch.Verdict), ch.Detail)
	return append(record, csvReason(old), csvReason(later))
}

// csvStatus is the row's status; "" when the run has no such row.
func csvStatus(m Measure) string {
	if m.Result == nil {
		return ""
	}
	return string(m.Result.Status)
}

func csvReason(m Measure) string {
	if m.Result == nil {
		return ""
	}
	return m.Result.Reason
}
