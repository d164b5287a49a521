// Package cell formats the figures of one table cell: times, ratios,
// noise, and numbers for machines. It is the one place where the reports'
// tables and compare's warning lines learn to write a number, so that a
// time reads the same everywhere flashcore prints it.
package cell

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Missing fills a cell whose figure does not exist or cannot be computed.
const Missing = "—"

// Finite reports whether x is a real number (not NaN, not ±Inf).
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Sig3 writes x with three significant digits and no exponent:
// 7.41, 74.1, 741, 7410, 0.0123.
func Sig3(x float64) string {
	if x == 0 {
		return "0"
	}
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(rounded)))))
	return strconv.FormatFloat(rounded, 'f', decimals, 64)
}

// Duration writes a time given in nanoseconds in µs with three significant
// digits, switching to ms at 10 ms and to s at 10 s; Missing when it is
// not a time.
func Duration(ns float64) string {
	switch {
	case !Finite(ns) || ns < 0:
		return Missing
	case ns >= 10e9:
		return Sig3(ns/1e9) + " s"
	case ns >= 10e6:
		return Sig3(ns/1e6) + " ms"
	}
	return Sig3(ns/1e3) + " µs"
}

// Noise writes a relative noise as "±0.3%"; "±?" when there were too few
// samples to know it.
func Noise(rel float64) string {
	if !Finite(rel) || rel < 0 {
		return "±?"
	}
	return fmt.Sprintf("±%.1f%%", rel*100)
}

// Ratio writes a speedup or a ratio with two decimals, or three
// significant digits when it is below 0.01 and two decimals would read
// 0.00; Missing when it is not a positive number.
func Ratio(x float64) string {
	switch {
	case !Finite(x) || x <= 0:
		return Missing
	case x < 0.01:
		return Sig3(x) + "×"
	}
	return fmt.Sprintf("%.2f×", x)
}

// OneLine folds all whitespace runs, newlines included, into single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Truncate cuts s to at most n runes, marking the cut with "…".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return strings.TrimRight(string(runes[:n-1]), " ") + "…"
}

// Number writes a number in full precision for machines, without an
// exponent unless it is tiny or huge (as JSON numbers are written); NaN,
// +Inf or -Inf when it is not finite.
func Number(x float64) string {
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

// Percent writes a fraction as a percentage with up to four significant
// digits: 0.05 is "5%", 0.025 is "2.5%".
func Percent(fraction float64) string {
	return fmt.Sprintf("%.4g%%", fraction*100)
}
