package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flashcore/bench/core/results"
)

// missing fills a cell whose figure does not exist or cannot be computed.
const missing = "—"

// maxReasonRunes is how much of a reason the text tables show.
const maxReasonRunes = 60

// finite reports whether x is a real number (not NaN, not ±Inf).
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// sig3 writes x with three significant digits and no exponent:
// 7.41, 74.1, 741, 7410, 0.0123.
func sig3(x float64) string {
	if x == 0 {
		return "0"
	}
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(rounded)))))
	return strconv.FormatFloat(rounded, 'f', decimals, 64)
}

// duration writes a time given in nanoseconds in µs with three significant
// digits, switching to ms at 10 ms and to s at 10 s.
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

// noise writes a relative noise as "±0.3%"; "±?" when there were too few
// samples to know it.
func noise(rel float64) string {
	if !finite(rel) || rel < 0 {
		return "±?"
	}
	return fmt.Sprintf("±%.1f%%", rel*100)
}

// kernelCell is the kernel median with its noise: "7.41 µs ±0.3%".
func kernelCell(s results.Stats) string {
	if s.N == 0 || !finite(s.MedianNs) {
		return missing
	}
	return duration(s.MedianNs) + " " + noise(s.RelNoise)
}

// medianCell is a median alone, for the call and extra L2 columns.
func medianCell(s results.Stats) string {
	if s.N == 0 {
		return missing
	}
	return duration(s.MedianNs)
}

// speedupCell writes a speedup with two decimals, or three significant
// digits when it is below 0.01 and two decimals would read 0.00.
func speedupCell(x float64) string {
	switch {
	case !finite(x) || x <= 0:
		return missing
	case x < 0.01:
		return sig3(x) + "×"
	}
	return fmt.Sprintf("%.2f×", x)
}

// rateCell writes a throughput; zero means unknown.
func rateCell(x float64) string {
	if !finite(x) || x <= 0 {
		return missing
	}
	return sig3(x)
}

// percentCell writes a percentage of peak; zero means the peak is unknown.
func percentCell(pct float64) string {
	if !finite(pct) || pct <= 0 {
		return missing
	}
	return fmt.Sprintf("%.1f%%", pct)
}

// relErrCell writes the relative L2 error: "3.1e-04".
func relErrCell(c *results.CheckResult) string {
	switch {
	case c == nil:
		return missing
	case math.IsNaN(c.RelL2Err):
		return "NaN"
	case math.IsInf(c.RelL2Err, 0):
		return "Inf"
	case c.RelL2Err == 0:
		return "0"
	}
	return fmt.Sprintf("%.1e", c.RelL2Err)
}

// verdictWord names a status. FAIL (a finding: wrong output) and ERROR
// (a failure: the plugin broke) are different words on purpose.
func verdictWord(s results.Status) string {
	switch s {
	case results.StatusPass:
		return "PASS"
	case results.StatusFail:
		return "FAIL"
	case results.StatusSkip:
		return "SKIP"
	case results.StatusError:
		return "ERROR"
	}
	return strings.ToUpper(string(s))
}

// verdictCell is the verdict with its reason, cut to maxReasonRunes.
func verdictCell(r *results.Result) string {
	word := verdictWord(r.Status)
	if throttled(r) {
		word += " (throttled)"
	}
	reason := oneLine(r.Reason)
	if reason == "" {
		return word
	}
	return word + ": " + truncate(reason, maxReasonRunes)
}

// throttled says whether the SM clock fell during any of r's timings.
func throttled(r *results.Result) bool {
	for _, t := range r.Timings {
		if t.Throttled {
			return true
		}
	}
	return false
}

// oneLine folds all whitespace runs, newlines included, into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return strings.TrimRight(string(runes[:n-1]), " ") + "…"
}

// shortHash is the first 12 hex digits of a SHA-256, enough to tell
// inputs apart in a table.
func shortHash(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return missing
	}
	return sha
}

// csvFloat writes a number in full precision for machines, without an
// exponent unless it is tiny or huge (as JSON numbers are written); NaN
// when it is not a number.
func csvFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 0):
		return strconv.FormatFloat(x, 'g', -1, 64)
	case x != 0 && (math.Abs(x) < 1e-6 || math.Abs(x) >= 1e21):
		return strconv.FormatFloat(x, 'e', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}
