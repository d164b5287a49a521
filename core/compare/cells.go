package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flashcore/bench/core/results"
)

// missing fills a cell whose figure does not exist.
const missing = "—"

// maxReasonRunes is how much of a reason the text tables show.
const maxReasonRunes = 72

func nan() float64 { return math.NaN() }

// finite reports whether x is a real number (not NaN, not ±Inf).
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// sig3 writes x with three significant digits and no exponent.
func sig3(x float64) string {
	if x == 0 {
		return "0"
	}
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(rounded)))))
	return strconv.FormatFloat(rounded, 'f', decimals, 64)
}

// duration writes nanoseconds as µs with three significant digits,
// switching to ms at 10 ms and to s at 10 s, as the report does.
func duration(ns float64) string {
	switch {
	case !finite(ns) || ns < 0:
		return missing
	case ns >= 10e9:
		return sig3(ns/1e9) + " s"
	case ns >= 10e6:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e3) + " µs"
}

// noisePercent writes a relative noise as "±0.3%"; "±?" when unknown.
func noisePercent(rel float64) string {
	if !knownNoiseOK(rel) {
		return "±?"
	}
	return fmt.Sprintf("±%.1f%%", rel*100)
}

// ratioCell writes a ratio with two decimals, or three significant digits
// when two decimals would round it to 0.00.
func ratioCell(x float64) string {
	switch {
	case !finite(x) || x <= 0:
		return missing
	case x < 0.01:
		return sig3(x) + "×"
	}
	return fmt.Sprintf("%.2f×", x)
}

// intervalCell is the 95% confidence interval of a timed pair's ratio:
// "1.08–1.12×"; "≈" marks the summary rule's rough interval, and
// "unbounded" rows too few or too noisy to bound it. "—" for a pair
// without a ratio.
func intervalCell(ch Change) string {
	switch {
	case !finite(ch.Ratio):
		return missing
	case math.IsInf(ch.High, 1):
		return "unbounded"
	}
	cell := strings.TrimSuffix(ratioCell(ch.Low), "×") + "–" + ratioCell(ch.High)
	if ch.Low <= 0 {
		cell = "0–" + ratioCell(ch.High)
	}
	if ch.Rule == SummaryRule {
		return "≈" + cell
	}
	return cell
}

// measureCell is what a run recorded for a row: the kernel median with its
// noise for a passing, timed row; the status word otherwise; "—" when the
// run has no such row.
func measureCell(m Measure) string {
	switch {
	case m.Result == nil:
		return missing
	case m.timed():
		return duration(m.KernelNs) + " " + noisePercent(m.RelNoise)
	case m.Result.Status == results.StatusPass:
		return "pass, no time"
	}
	return statusWord(m.Result.Status)
}

// verdictCell is a verdict with its detail: "REGRESSION (pass → FAIL)",
// "unsure (too few samples: 3 and 3)", "not compared (SKIP in both)".
func verdictCell(ch Change) string {
	if ch.Detail == "" {
		return string(ch.Verdict)
	}
	return fmt.Sprintf("%s (%s)", ch.Verdict, ch.Detail)
}

// statusWord names a status as the report does; FAIL (a finding) and
// ERROR (a failure) stay different words.
func statusWord(s results.Status) string {
	switch s {
	case results.StatusPass:
		return "pass"
	case "":
		return "?"
	}
	return strings.ToUpper(string(s))
}

// oneLine folds all whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return strings.TrimRight(string(runes[:n-1]), " ") + "…"
}

// shortHash is the first 12 hex digits of a SHA-256; "none" when absent.
func shortHash(sha string) string {
	switch {
	case sha == "":
		return "none"
	case len(sha) > 12:
		return sha[:12]
	}
	return sha
}

// csvFloat writes a number in full precision for machines; "" when it is
// not a finite number.
func csvFloat(x float64) string {
	if !finite(x) {
		return ""
	}
	if x != 0 && (math.Abs(x) < 1e-6 || math.Abs(x) >= 1e21) {
		return strconv.FormatFloat(x, 'e', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}
