package comparereport

import (
	"fmt"
	"math"
	"strings"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
)

// comparisonReasonRunes is how much of a reason the comparison tables
// show; they have fewer columns than a case table, so more room.
const comparisonReasonRunes = 72

// intervalCell is the 95% confidence interval of a timed pair's ratio:
// "1.08–1.12×"; "≈" marks the summary rule's rough interval, and
// "unbounded" rows too few or too noisy to bound it. "—" for a pair
// without a ratio.
func intervalCell(ch compare.Change) string {
	switch {
	case !cell.Finite(ch.Ratio):
		return cell.Missing
	case math.IsInf(ch.High, 1):
		return "unbounded"
	}
	text := strings.TrimSuffix(cell.Ratio(ch.Low), "×") + "–" + cell.Ratio(ch.High)
	if ch.Low <= 0 {
		text = "0–" + cell.Ratio(ch.High)
	}
	if ch.Rule == compare.SummaryRule {
		return "≈" + text
	}
	return text
}

// measureCell is what a run recorded for a row: the kernel median with its
// noise for a passing, timed row; the status word otherwise; "—" when the
// run has no such row.
func measureCell(m compare.Measure) string {
	switch {
	case m.Result == nil:
		return cell.Missing
	case m.Timed():
		return cell.Duration(m.KernelNs) + " " + cell.Noise(m.RelNoise)
	case m.Result.Status == results.StatusPass:
		return "pass, no time"
	}
	return compare.StatusWord(m.Result.Status)
}

// changeCell is a verdict with its detail: "REGRESSION (pass → FAIL)",
// "unsure (too few samples: 3 and 3)", "not compared (SKIP in both)".
func changeCell(ch compare.Change) string {
	if ch.Detail == "" {
		return string(ch.Verdict)
	}
	return fmt.Sprintf("%s (%s)", ch.Verdict, ch.Detail)
}

// csvKnown writes a number in full precision for machines; "" when it is
// not a finite number, so that a spreadsheet reads an empty cell.
func csvKnown(x float64) string {
	if !cell.Finite(x) {
		return ""
	}
	return cell.Number(x)
}
