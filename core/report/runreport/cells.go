package runreport

import (
	"fmt"
	"math"
	"strings"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
)

// maxReasonRunes is how much of a reason the text tables show.
const maxReasonRunes = 60

// kernelCell is the kernel median with its noise: "7.41 µs ±0.3%".
func kernelCell(s results.Stats) string {
	if s.N == 0 || !cell.Finite(s.MedianNs) {
		return cell.Missing
	}
	return cell.Duration(s.MedianNs) + " " + cell.Noise(s.RelNoise)
}

// medianCell is a median alone, for the call and extra L2 columns.
func medianCell(s results.Stats) string {
	if s.N == 0 {
		return cell.Missing
	}
	return cell.Duration(s.MedianNs)
}

// rateCell writes a throughput; zero means unknown.
func rateCell(x float64) string {
	if !cell.Finite(x) || x <= 0 {
		return cell.Missing
	}
	return cell.Sig3(x)
}

// percentCell writes a percentage of peak; zero means the peak is unknown.
func percentCell(pct float64) string {
	if !cell.Finite(pct) || pct <= 0 {
		return cell.Missing
	}
	return fmt.Sprintf("%.1f%%", pct)
}

// relErrCell writes the relative L2 error: "3.1e-04".
func relErrCell(c *results.CheckResult) string {
	switch {
	case c == nil:
		return cell.Missing
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
	if r.Budget != nil && len(r.Budget.Hit) > 0 {
		word += " (budget)"
	}
	reason := cell.OneLine(r.Reason)
	if reason == "" {
		return word
	}
	return word + ": " + cell.Truncate(reason, maxReasonRunes)
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

// shortHash is the first 12 hex digits of a SHA-256, enough to tell
// inputs apart in a table.
func shortHash(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return cell.Missing
	}
	return sha
}
