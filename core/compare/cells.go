package compare

import (
	"math"
	"strings"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
)

func nan() float64 { return math.NaN() }

// finite reports whether x is a real number (not NaN, not ±Inf).
func finite(x float64) bool { return cell.Finite(x) }

// StatusWord names a status as the verdict details and tables do: "pass",
// and FAIL (a finding) and ERROR (a failure) as different loud words.
func StatusWord(s results.Status) string {
	switch s {
	case results.StatusPass:
		return "pass"
	case "":
		return "?"
	}
	return strings.ToUpper(string(s))
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
