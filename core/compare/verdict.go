package compare

import (
	"fmt"
	"math"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
)

// DefaultThreshold is the smallest relative change that counts (5%).
const DefaultThreshold = 0.05

// DefaultCPUThreshold is the smallest relative change that counts for a
// row timed on a CPU (35%), flashcore compare's default. A CPU's speed
// moves between two runs of one build, minutes apart, by more than one
// run's samples show: cpu-reference's rows of one build differed by up
// to 1.30x (0.83-1.30x) between runs on an idle GPU machine, and
// pytorch-sdpa's rows on a 2-core CPU machine by 0.69-1.29x, each with
// a tight interval, while its GPU rows stayed within the 5%
// (docs/compare.md, "Rows timed on a CPU").
const DefaultCPUThreshold = 0.35

// Verdict is what became of one row from the first run to a later one.
type Verdict string

const (
	// Faster and Slower: both rows passed and were timed, the times differ
	// significantly, and the estimated ratio is beyond the threshold.
	Faster Verdict = "faster"
	Slower Verdict = "slower"
	// Same: both rows passed and were timed, and the ratio's confidence
	// interval lies within the threshold: any change is smaller than it.
	Same Verdict = "same"
	// Unsure: both rows passed and were timed, but the samples cannot tell
	// a change beyond the threshold from none (too few samples, too much
	// noise, or a significant change whose size straddles the threshold).
	Unsure Verdict = "unsure"
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

// Rule names how two timed rows were judged.
type Rule string

const (
	// RankTest: from the raw samples, by a Mann–Whitney U test and the
	// Hodges–Lehmann ratio with its confidence interval (stats.CompareRatio).
	RankTest Rule = "rank test"
	// PlacementTest: from the raw samples of rows measured in several
	// placements of their buffers, by the same test and ratio applied to
	// the placements' medians: samples of one placement share it, so
	// they are not independent of each other, but placements are.
	PlacementTest Rule = "rank test of placements"
	// SummaryRule: from the recorded medians and their noise, for rows
	// without raw samples (files written before schema version 2).
	SummaryRule Rule = "summary"
)

// Alpha is the significance level of the rank test and one minus the
// confidence of the ratio's interval: 95%.
const Alpha = 0.05

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
	// N is the number of kernel samples the median summarises.
	N int
	// Samples are the raw kernel samples in the compared mode, in
	// nanoseconds; nil when the file has none.
	Samples []float64
	// PlacementMedians are the medians of the samples of each placement
	// of the row's buffers, in order; nil when the row was measured in
	// one placement (or its file has no samples).
	PlacementMedians []float64
	// SMClockMHz is the SM clock recorded while sampling; 0 when unknown.
	SMClockMHz float64
	// Method is how the kernel times were taken ("cupti+spin", ...); ""
	// when the row was not timed.
	Method string
	// ThrottleNote says how the clock fell during sampling; "" when the
	// row was not flagged as throttled.
	ThrottleNote string
	// OnCPU says that the row's backend ran on a CPU in this run (its
	// device's kind in the run's backends).
	OnCPU bool
}

// Change is a row of a later run judged against the first run's.
type Change struct {
	Verdict Verdict
	// Rule is how a timed pair was judged; "" for other verdicts.
	Rule Rule
	// Ratio is the estimated later time over the first (below 1 is
	// faster): by the rank test, the Hodges–Lehmann estimate, the median
	// of every ratio later sample ÷ first sample; by the summary rule, the
	// ratio of the medians. NaN unless both rows passed and were timed.
	Ratio float64
	// Low and High bound the ratio with 95% confidence; 0 and +Inf when
	// the rows cannot bound it (too few samples, unknown noise). By the
	// summary rule they are only approximate: Ratio ± Noise.
	Low, High float64
	// PValue is the rank test's two-sided p-value; NaN by the summary rule.
	PValue float64
	// Noise is, by the summary rule, the two rows' relative noise added;
	// NaN otherwise.
	Noise float64
	// Detail says more for some verdicts: "pass → FAIL", why a timed row
	// is unsure, or why the rows were not compared.
	Detail string
	// Threshold is the threshold the pair was judged by: the
	// comparison's, or its CPU threshold for a row timed on a CPU.
	Threshold float64
}

// Timed reports whether m is a passing row with a usable kernel median.
func (m Measure) Timed() bool {
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
	transition := StatusWord(from) + " → " + StatusWord(to)
	switch {
	case from == results.StatusPass && broken(to):
		return noRatio(Regression, transition)
	case broken(from) && to == results.StatusPass:
		return noRatio(Fixed, transition)
	case from == to && from != results.StatusPass:
		return noRatio(NotCompared, StatusWord(from)+" in both")
	case from != results.StatusPass || to != results.StatusPass:
		return noRatio(NotCompared, transition)
	case otherModel(before.Result, after.Result):
		// Times on two GPU models compare the GPUs, not the change.
		return noRatio(NotCompared, fmt.Sprintf("ran on %s in old, %s in new", before.Result.Model(), after.Result.Model()))
	case !before.Timed():
		return noRatio(NotCompared, "no kernel time in old")
	case !after.Timed():
		return noRatio(NotCompared, "no kernel time in new")
	}
	return judgeTime(before, after, threshold)
}

// otherModel reports whether both rows name the GPU they ran on and the
// two are different models.
func otherModel(before, after *results.Result) bool {
	return before.Model() != "" && after.Model() != "" && before.Model() != after.Model()
}

// judgeTime is the rule for two passing, timed rows: by the rank test
// when both rows kept their raw samples, else by the summary rule. Either
// gives a ratio, an interval for it and whether the times differ
// significantly, and decide turns those into a verdict.
func judgeTime(before, after Measure, threshold float64) Change {
	if len(before.PlacementMedians) > 1 && len(after.PlacementMedians) > 1 {
		if test, err := stats.CompareRatio(before.PlacementMedians, after.PlacementMedians, Alpha); err == nil {
			c := Change{Rule: PlacementTest, Ratio: test.Ratio, Low: test.Low, High: test.High, PValue: test.PValue, Noise: nan()}
			// Too few placements for an interval decide nothing, even
			// where ties let the test's approximation reach p < 0.05.
			decide(&c, test.PValue < Alpha && !math.IsInf(c.High, 1), threshold)
			if c.Verdict == Unsure && math.IsInf(c.High, 1) {
				c.Detail = fmt.Sprintf("too few placements: %d and %d", test.OldN, test.NewN)
			}
			return c
		}
	}
	if len(before.Samples) > 0 && len(after.Samples) > 0 {
		if test, err := stats.CompareRatio(before.Samples, after.Samples, Alpha); err == nil {
			c := Change{Rule: RankTest, Ratio: test.Ratio, Low: test.Low, High: test.High, PValue: test.PValue, Noise: nan()}
			decide(&c, test.PValue < Alpha, threshold)
			if c.Verdict == Unsure && math.IsInf(c.High, 1) {
				c.Detail = fmt.Sprintf("too few samples: %d and %d", test.OldN, test.NewN)
			}
			return c
		}
	}
	return summaryRule(before, after, threshold)
}

// summaryRule judges rows without raw samples from their medians and
// noise alone. The ratio is the ratio of the medians, and its interval is
// taken as ratio ± (noise before + noise after), where each noise is the
// half-width of the 95% confidence interval of its median over the
// median: the two medians' intervals stop overlapping about where the
// ratio leaves 1 ± that sum, so the change is significant only beyond it.
// It is a rough interval (it adds two half-widths rather than combining
// them), which is why rows with samples use the rank test instead. A
// noise the run could not know (fewer than six samples) leaves the ratio
// unbounded.
func summaryRule(before, after Measure, threshold float64) Change {
	ratio := after.KernelNs / before.KernelNs
	c := Change{Rule: SummaryRule, Ratio: ratio, Low: 0, High: math.Inf(1), PValue: nan(), Noise: nan()}
	if !knownNoiseOK(before.RelNoise) || !knownNoiseOK(after.RelNoise) {
		decide(&c, false, threshold)
		c.Detail = "noise unknown"
		return c
	}
	c.Noise = before.RelNoise + after.RelNoise
	c.Low, c.High = max(0, ratio-c.Noise), ratio+c.Noise
	decide(&c, math.Abs(ratio-1) > c.Noise, threshold)
	return c
}

// decide is the verdict of a timed pair, given its ratio, the interval
// and whether the difference is significant, with threshold t:
//
//  1. significant and the whole interval above 1 + t: slower;
//  2. significant and the whole interval below 1 − t: faster;
//  3. the whole interval within [1 − t, 1 + t]: same, since any change is
//     smaller than the threshold;
//  4. otherwise unsure: the rows cannot tell a change beyond t from none.
//
// Rules 1 and 2 ask of a change what rule 3 asks of no change: that the
// interval, not only the estimate, clears the threshold. An estimate just
// past it with an interval reaching back inside (0.948, 0.917–0.998) is
// unsure: the noise between placements makes such estimates by chance
// (docs/compare.md). A change exactly at the threshold is not beyond it.
// Rule 3 makes too few samples unsure rather than same: they bound
// nothing.
func decide(c *Change, significant bool, t float64) {
	switch {
	case significant && c.Low > 1+t:
		c.Verdict = Slower
	case significant && c.High < 1-t:
		c.Verdict = Faster
	case c.Low >= 1-t && c.High <= 1+t:
		c.Verdict = Same
	default:
		c.Verdict, c.Detail = Unsure, "interval reaches beyond ±"+cell.Percent(t)
	}
}

func noRatio(v Verdict, detail string) Change {
	return Change{Verdict: v, Ratio: nan(), Low: nan(), High: nan(), PValue: nan(), Noise: nan(), Detail: detail}
}

// broken reports whether s is a failed row: a FAIL (wrong output) or an
// ERROR (the plugin broke).
func broken(s results.Status) bool {
	return s == results.StatusFail || s == results.StatusError
}

// knownNoiseOK reports whether a recorded relative noise is a usable
// figure.
func knownNoiseOK(rel float64) bool { return finite(rel) && rel >= 0 }
