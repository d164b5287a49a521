package compare

import (
	"fmt"
	"math"

	"github.com/flashcore/bench/core/results"
)

// DefaultThreshold is the smallest relative change that counts (5%).
const DefaultThreshold = 0.05

// Verdict is what became of one row from the first run to a later one.
type Verdict string

const (
	// Faster and Slower: both rows passed and were timed, and the kernel
	// median moved by more than the threshold and more than the noise.
	Faster Verdict = "faster"
	Slower Verdict = "slower"
	// Same: both rows passed and were timed, and the change is within the
	// threshold or within the noise.
	Same Verdict = "same"
	// Regression: the row passed and now FAILs or ERRORs, whatever its time.
	Regression Verdict = "REGRESSION"
	// Fixed: the row FAILed or ERRORed and now passes.
	Fixed Verdict = "FIXED"
	// Added and Removed: the row is only in the later run, or only in the
	// first.
	Added   Verdict = "added"
	Removed Verdict = "removed"
	// NotCompared: both runs have the row, but not two passing, timed rows
	// (a skip on either side, a FAIL in both, no kernel time).
	NotCompared Verdict = "not compared"
	// Absent: neither run has the row (another run of an ablation does).
	Absent Verdict = ""
)

// Measure is one row as one run recorded it.
type Measure struct {
	// Result is the row; nil when the run has no such row.
	Result *results.Result
	// KernelNs is the kernel median in the compared L2 mode; NaN when the
	// row has no usable one (not timed, or a median that is not positive).
	KernelNs float64
	// RelNoise is the recorded relative noise of that median: the
	// half-width of its 95% confidence interval over the median. NaN when
	// the run could not know it.
	RelNoise float64
}

// Change is a row of a later run judged against the first run's.
type Change struct {
	Verdict Verdict
	// Ratio is the later kernel median over the first one (below 1 is
	// faster); NaN unless both rows passed and were timed.
	Ratio float64
	// Noise is the two rows' relative noise added, unknown noise counted as
	// 0; NaN unless both rows passed and were timed.
	Noise float64
	// NoiseUnknown: one row's noise was unknown and counted as 0, so the
	// verdict may call a change that is only noise.
	NoiseUnknown bool
	// Detail says more for some verdicts: "pass → FAIL", "within noise",
	// or why the rows were not compared.
	Detail string
}

// timed reports whether m is a passing row with a usable kernel median.
func (m Measure) timed() bool {
	return m.Result != nil && m.Result.Status == results.StatusPass && m.KernelNs > 0 && !math.IsInf(m.KernelNs, 0)
}

// judge sets a later run's row (after) against the first run's (before).
// Correctness comes first: a pass that now fails or errors is a
// REGRESSION and the reverse is FIXED, whatever the times. Only two
// passing, timed rows are judged on time, by judgeTime.
func judge(before, after Measure, threshold float64) Change {
	switch {
	case before.Result == nil && after.Result == nil:
		return noRatio(Absent, "")
	case before.Result == nil:
		return noRatio(Added, "")
	case after.Result == nil:
		return noRatio(Removed, "")
	}
	from, to := before.Result.Status, after.Result.Status
	transition := statusWord(from) + " → " + statusWord(to)
	switch {
	case from == results.StatusPass && broken(to):
		return noRatio(Regression, transition)
	case broken(from) && to == results.StatusPass:
		return noRatio(Fixed, transition)
	case from == to && from != results.StatusPass:
		return noRatio(NotCompared, statusWord(from)+" in both")
	case from != results.StatusPass || to != results.StatusPass:
		return noRatio(NotCompared, transition)
	case !before.timed():
		return noRatio(NotCompared, "no kernel time in old")
	case !after.timed():
		return noRatio(NotCompared, "no kernel time in new")
	}
	return judgeTime(before, after, threshold)
}

// judgeTime is the rule for two passing, timed rows. The ratio r is the
// later median over the first. The change |r−1| counts only if it exceeds
// both the threshold and the sum of the two medians' relative noise (the
// half-widths of their 95% confidence intervals): while the two intervals
// overlap, the medians cannot be told apart, and they stop overlapping
// when r leaves about 1 ± (noise before + noise after). Noise the run
// could not know (fewer than six samples) counts as 0, and the Change
// says so.
func judgeTime(before, after Measure, threshold float64) Change {
	ratio := after.KernelNs / before.KernelNs
	noise := knownNoise(before.RelNoise) + knownNoise(after.RelNoise)
	c := Change{Ratio: ratio, Noise: noise, NoiseUnknown: !knownNoiseOK(before.RelNoise) || !knownNoiseOK(after.RelNoise)}
	change := math.Abs(ratio - 1)
	switch {
	case change <= threshold:
		c.Verdict = Same
	case change <= noise:
		c.Verdict, c.Detail = Same, fmt.Sprintf("within noise %s", noisePercent(noise))
	case ratio < 1:
		c.Verdict = Faster
	default:
		c.Verdict = Slower
	}
	return c
}

func noRatio(v Verdict, detail string) Change {
	return Change{Verdict: v, Ratio: math.NaN(), Noise: math.NaN(), Detail: detail}
}

// broken reports whether s is a failed row: a FAIL (wrong output) or an
// ERROR (the plugin broke).
func broken(s results.Status) bool {
	return s == results.StatusFail || s == results.StatusError
}

// knownNoiseOK reports whether a recorded relative noise is a usable
// figure.
func knownNoiseOK(rel float64) bool { return finite(rel) && rel >= 0 }

// knownNoise is rel, or 0 when the run could not know it.
func knownNoise(rel float64) float64 {
	if !knownNoiseOK(rel) {
		return 0
	}
	return rel
}
