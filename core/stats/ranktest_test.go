package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want)) }

// TestCompareRatioKnownValues checks the test against figures worked out
// apart from this code: the two-sample example of Hollander and Wolfe
// (R's wilcox.test gives W = 35, one-sided p = 0.1272), and small sets
// whose exact p-values are counts of arrangements (2 of C(6,3) = 20, 2 of
// C(10,5) = 252). The ratio and interval figures were found apart from
// this code, by listing every pairwise ratio and every arrangement.
func TestCompareRatioKnownValues(t *testing.T) {
	tests := []struct {
		name            string
		older, newer    []float64
		u, p            float64
		exact           bool
		ratio, low, hig float64
	}{
		{"Hollander and Wolfe", []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46},
			[]float64{1.15, 0.88, 0.90, 0.74, 1.21}, 15, 0.2544122544122544, true, 0.7623304256784819, 0.5103448275862069, 1.1634615384615383},
		{"three against three, all slower", []float64{10, 11, 12}, []float64{13, 14, 15}, 9, 0.1, true, 1.2727272727272723, 0, math.Inf(1)},
		{"five against five, all faster", []float64{10, 11, 12, 13, 14}, []float64{5, 6, 7, 8, 9}, 0, 2.0 / 252, true, 0.5833333333333333, 0.41666666666666663, 0.7999999999999997},
		// Ties: the normal approximation, σ² = 16/12·(9 − 4·6/56), k = ⌊8 − 1.96σ⌋ = 1.
		{"the same samples", []float64{7, 8, 9, 10}, []float64{7, 8, 9, 10}, 8, 1, false, 1, 0.7, 10.0 / 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CompareRatio(tt.older, tt.newer, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			if got.U != tt.u || !near(got.PValue, tt.p, 1e-12) || got.Exact != tt.exact {
				t.Errorf("U %v, p %v, exact %v; want %v, %v, %v", got.U, got.PValue, got.Exact, tt.u, tt.p, tt.exact)
			}
			if !near(got.Ratio, tt.ratio, 1e-9) || !near(got.Low, tt.low, 1e-9) || !(got.High == tt.hig || near(got.High, tt.hig, 1e-9)) {
				t.Errorf("ratio %v in [%v, %v]; want %v in [%v, %v]", got.Ratio, got.Low, got.High, tt.ratio, tt.low, tt.hig)
			}
		})
	}
}

func TestCompareRatioRefusesBadInput(t *testing.T) {
	tests := []struct {
		name         string
		older, newer []float64
		alpha        float64
		want         string
	}{
		{"no old samples", nil, []float64{1}, 0.05, "no samples"},
		{"a zero time", []float64{1, 0}, []float64{1}, 0.05, "sample 1 is 0"},
		{"a NaN time", []float64{1}, []float64{math.NaN()}, 0.05, "sample 0 is NaN"},
		{"alpha of one", []float64{1}, []float64{1}, 1, "alpha 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CompareRatio(tt.older, tt.newer, tt.alpha); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestPairDifferencesMatchAFullList sets the bisection against the sorted
// list of every difference, ties included.
func TestPairDifferencesMatchAFullList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float64, 37), make([]float64, 23)
	for i := range x {
		x[i] = float64(rng.IntN(40))
	}
	for i := range y {
		y[i] = float64(rng.IntN(40)) + 0.5*float64(rng.IntN(2))
	}
	slices.Sort(x)
	slices.Sort(y)
	var all []float64
	for _, a := range x {
		for _, b := range y {
			all = append(all, b-a)
		}
	}
	slices.Sort(all)
	d := pairDifferences{x, y}
	for k := 1; k <= len(all); k++ {
		if got := d.kth(k); math.Abs(got-all[k-1]) > 1e-12 {
			t.Fatalf("kth(%d) = %v, want %v", k, got, all[k-1])
		}
	}
}

// lognormal draws n times around 10 µs with a spread of about 2%, scaled.
func lognormal(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * 10000 * math.Exp(0.02*rng.NormFloat64())
	}
	return out
}

// TestCompareRatioCalibration draws many pairs of sets: from one
// distribution, the test must call about 5% of them different (it is a
// 5% test), and the interval must hold the true ratio in at least about
// 95% of pairs drawn 8% apart, with the exact distribution (10 samples)
// and the normal approximation (60 samples).
func TestCompareRatioCalibration(t *testing.T) {
	for _, n := range []int{10, 60} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		const trials = 2000
		falseAlarms, covered := 0, 0
		for range trials {
			same, err := CompareRatio(lognormal(rng, n, 1), lognormal(rng, n, 1), 0.05)
			if err != nil {
				t.Fatal(err)
			}
			if same.PValue < 0.05 {
				falseAlarms++
			}
			slower, _ := CompareRatio(lognormal(rng, n, 1), lognormal(rng, n, 1.08), 0.05)
			if slower.Low <= 1.08 && 1.08 <= slower.High {
				covered++
			}
		}
		if rate := float64(falseAlarms) / trials; rate < 0.03 || rate > 0.065 {
			t.Errorf("n = %d: %.1f%% of same-distribution pairs called different, want about 5%%", n, 100*rate)
		}
		if coverage := float64(covered) / trials; coverage < 0.935 {
			t.Errorf("n = %d: the interval held the true ratio in %.1f%% of pairs, want at least 95%%", n, 100*coverage)
		}
	}
}

// TestCompareRatioLargeSets: 2,000 samples a side (the most a run takes)
// stay quick, and a 3% slowdown in 1% noise is found.
func TestCompareRatioLargeSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	got, err := CompareRatio(lognormal(rng, 2000, 1), lognormal(rng, 2000, 1.03), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if got.Exact || got.PValue > 1e-6 || !near(got.Ratio, 1.03, 0.003) || got.Low > 1.03 || got.High < 1.03 || got.High-got.Low > 0.01 {
		t.Errorf("got %+v, want a clear 3%% slowdown with a narrow interval", got)
	}
}
