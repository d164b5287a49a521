package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// RatioTest is how a set of new samples compares with a set of old ones,
// decided from the samples alone: a Mann–Whitney U test of whether they
// differ at all, and a Hodges–Lehmann estimate, with a confidence
// interval, of the factor between them.
//
// Assumptions, as golang.org/x/perf's benchmath states its own: the
// samples are independent of each other, within and between the two sets.
// The p-value assumes nothing about the distribution. The ratio and its
// interval add one assumption, the shift model on the logarithm of time:
// the new samples are distributed like the old ones multiplied by one
// factor. Times of one kernel under one clock fit it well; a new set with
// another shape of distribution (bimodal where the old one was not) does
// not, and then the ratio is a summary of the change, not the change.
type RatioTest struct {
	OldN, NewN int
	// U counts the pairs (old sample, new sample) where the new sample is
	// the larger, ties counting one half: from 0 (every new sample is
	// faster) to OldN·NewN (every new sample is slower).
	U float64
	// PValue is the two-sided p-value of the U test: how likely a U at
	// least this far from its middle is when both sets come from one
	// distribution.
	PValue float64
	// Exact is set when PValue and the interval come from the exact
	// distribution of U (small sets without ties); otherwise they come
	// from its normal approximation, with a correction for ties.
	Exact bool
	// Ratio is the Hodges–Lehmann estimate of new over old: the median of
	// the OldN·NewN ratios new sample ÷ old sample.
	Ratio float64
	// Low and High bound the ratio with at least the confidence asked for
	// (Moses' interval: order statistics of the same pairwise ratios).
	// With too few samples for any interval at that confidence, they are 0
	// and +Inf.
	Low, High float64
}

// exactLimit is the largest set, on either side, for which the exact
// distribution of U is used (without ties); its cost grows as the square
// of OldN·NewN, and beyond it the normal approximation is close.
const exactLimit = 50

// CompareRatio tests newer against older at confidence 1−alpha (0.05
// gives 95%). Every sample must be a positive time. The test is the
// Mann–Whitney U test, two-sided; see RatioTest for what it assumes.
func CompareRatio(older, newer []float64, alpha float64) (RatioTest, error) {
	if len(older) == 0 || len(newer) == 0 {
		return RatioTest{}, errors.New("rank test: no samples on one side")
	}
	if !(alpha > 0 && alpha < 1) {
		return RatioTest{}, fmt.Errorf("rank test: alpha %v is not between 0 and 1", alpha)
	}
	x, err := sortedLogs(older)
	if err != nil {
		return RatioTest{}, err
	}
	y, err := sortedLogs(newer)
	if err != nil {
		return RatioTest{}, err
	}
	t := RatioTest{OldN: len(x), NewN: len(y)}
	u, tieSum := rankSum(x, y)
	t.U = u
	t.Exact = tieSum == 0 && len(x) <= exactLimit && len(y) <= exactLimit
	k := t.pValueAndRank(tieSum, alpha)
	d := pairDifferences{x, y}
	t.Ratio = math.Exp(d.median())
	t.Low, t.High = 0, math.Inf(1)
	if k >= 1 {
		pairs := len(x) * len(y)
		t.Low, t.High = math.Exp(d.kth(k)), math.Exp(d.kth(pairs+1-k))
	}
	return t, nil
}

// pValueAndRank sets the p-value and returns k: the interval runs from the
// k-th smallest to the k-th largest pairwise ratio, and k < 1 means that no
// interval reaches the confidence.
func (t *RatioTest) pValueAndRank(tieSum, alpha float64) int {
	m, n := float64(t.OldN), float64(t.NewN)
	half := m * n / 2
	if t.Exact {
		cdf := uDistribution(t.OldN, t.NewN)
		t.PValue = min(1, 2*cdf[int(math.Floor(min(t.U, m*n-t.U)))])
		k := 0
		for k < len(cdf) && cdf[k] <= alpha/2 {
			k++
		}
		return k // P(U ≤ k−1) ≤ alpha/2 < P(U ≤ k)
	}
	variance := m * n / 12 * ((m + n + 1) - tieSum/((m+n)*(m+n-1)))
	if variance <= 0 {
		t.PValue = 1 // every sample ties with every other
	} else {
		z := max(0, math.Abs(t.U-half)-0.5) / math.Sqrt(variance)
		t.PValue = math.Erfc(z / math.Sqrt2)
	}
	zCrit := math.Sqrt2 * math.Erfinv(1-alpha)
	return int(math.Floor(half - zCrit*math.Sqrt(max(variance, 0))))
}

func sortedLogs(samples []float64) ([]float64, error) {
	logs := make([]float64, len(samples))
	for i, s := range samples {
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("rank test: sample %d is %v, not a positive time", i, s)
		}
		logs[i] = math.Log(s)
	}
	slices.Sort(logs)
	return logs, nil
}

// rankSum returns U (pairs where y is the larger, ties one half) and the
// sum of t³−t over the groups of tied values, for the variance.
func rankSum(x, y []float64) (u, tieSum float64) {
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		v := math.Inf(1)
		if i < len(x) {
			v = x[i]
		}
		if j < len(y) && y[j] < v {
			v = y[j]
		}
		tx, ty := 0, 0
		for i < len(x) && x[i] == v {
			i, tx = i+1, tx+1
		}
		for j < len(y) && y[j] == v {
			j, ty = j+1, ty+1
		}
		// Each y of this value beats the x below it and ties with tx.
		u += float64(ty) * (float64(i-tx) + float64(tx)/2)
		if t := float64(tx + ty); t > 1 {
			tieSum += t*t*t - t
		}
	}
	return u, tieSum
}

// uDistributions caches the exact distributions of U by set sizes: a
// comparison of many rows asks for the same few sizes again and again.
var uDistributions sync.Map // [2]int → []float64

// uDistribution is the cumulative distribution of U for m old and n new
// samples without ties: cdf[u] = P(U ≤ u). It follows from placing the
// largest of the m+n samples: a new one (probability n/(m+n)) is larger
// than all m old ones and adds m to U; an old one adds nothing.
func uDistribution(m, n int) []float64 {
	if cached, ok := uDistributions.Load([2]int{m, n}); ok {
		return cached.([]float64)
	}
	// prev[b] is the distribution for (a−1, b), cur[b] for (a, b).
	prev := make([][]float64, n+1)
	for b := range prev {
		prev[b] = []float64{1} // no old samples: U = 0
	}
	for a := 1; a <= m; a++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1}
		for b := 1; b <= n; b++ {
			p := make([]float64, a*b+1)
			oldTop, newTop := float64(a)/float64(a+b), float64(b)/float64(a+b)
			for u, q := range prev[b] {
				p[u] += oldTop * q
			}
			for u, q := range cur[b-1] {
				p[u+a] += newTop * q
			}
			cur[b] = p
		}
		prev = cur
	}
	cdf := prev[n]
	for u := 1; u < len(cdf); u++ {
		cdf[u] += cdf[u-1]
	}
	uDistributions.Store([2]int{m, n}, cdf)
	return cdf
}

// pairDifferences are the len(x)·len(y) differences y[j] − x[i] of two
// ascending slices of logarithms, found by rank without listing them all
// (two sets of 2,000 samples have four million).
type pairDifferences struct{ x, y []float64 }

func (d pairDifferences) median() float64 {
	pairs := len(d.x) * len(d.y)
	if pairs%2 == 1 {
		return d.kth((pairs + 1) / 2)
	}
	return (d.kth(pairs/2) + d.kth(pairs/2+1)) / 2
}

// kth is the k-th smallest difference (1 ≤ k ≤ pairs), by bisection on
// the value, exact to 1e-12 (a ratio to twelve digits): the count of
// differences at or below a value takes one pass over both slices.
func (d pairDifferences) kth(k int) float64 {
	lo, hi := d.y[0]-d.x[len(d.x)-1], d.y[len(d.y)-1]-d.x[0]
	if d.countAtMost(lo) >= k {
		return lo
	}
	// countAtMost(lo) < k ≤ countAtMost(hi)
	for hi-lo > 1e-12 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if d.countAtMost(mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	return d.smallestAbove(lo)
}

// countAtMost counts the differences y[j] − x[i] ≤ v.
func (d pairDifferences) countAtMost(v float64) int {
	count, i := 0, 0
	for _, yj := range d.y {
		for i < len(d.x) && d.x[i] < yj-v {
			i++
		}
		count += len(d.x) - i
	}
	return count
}

// smallestAbove is the smallest difference greater than v.
func (d pairDifferences) smallestAbove(v float64) float64 {
	best := math.Inf(1)
	i := -1 // the last x with y[j] − x > v
	for _, yj := range d.y {
		for i+1 < len(d.x) && yj-d.x[i+1] > v {
			i++
		}
		if i >= 0 {
			best = min(best, yj-d.x[i])
		}
	}
	return best
}
