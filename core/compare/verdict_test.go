package compare

import (
	"math"
	"testing"

	"github.com/flashcore/bench/core/results"
)

// row builds a Measure of a row with status, kernel median and noise.
func row(status results.Status, medianNs, relNoise float64) Measure {
	return Measure{Result: &results.Result{Status: status}, KernelNs: medianNs, RelNoise: relNoise}
}

func passed(medianNs, relNoise float64) Measure { return row(results.StatusPass, medianNs, relNoise) }

var (
	none    = Measure{KernelNs: math.NaN(), RelNoise: math.NaN()}
	unknown = math.NaN()
	failed  = row(results.StatusFail, 90, 0.001)
)

// sampled is a passing row with n raw samples spread evenly over
// median·(1 ± spread/2).
func sampled(median float64, n int, spread float64) Measure {
	m := passed(median, spread/2)
	for i := range n {
		m.Samples = append(m.Samples, median*(1+spread*(float64(i)/float64(n-1)-0.5)))
	}
	return m
}

// placed is a passing row measured in one placement per level: each
// placement's n samples spread by 0.4% around its level, as a run that
// moved its buffers between blocks records them.
func placed(n int, levels ...float64) Measure {
	r := &results.Result{Status: results.StatusPass}
	s := &results.Samples{}
	for _, level := range levels {
		for i := range n {
			s.KernelNs = append(s.KernelNs, int64(level*(1+0.004*(float64(i)/float64(n-1)-0.5))))
		}
		s.KernelBlocks = append(s.KernelBlocks, n)
	}
	r.Timings = []results.Timing{{L2: "hot", Kernel: results.Stats{N: len(s.KernelNs), MedianNs: levels[0], RelNoise: 0.002}, Samples: s}}
	return measure(r, "hot")
}

// TestJudge is the verdict rule: correctness first, then time, by the
// rank test where both rows have samples and by the summary rule where
// not; a change counts only when significant and beyond the threshold,
// and "same" needs an interval within the threshold.
func TestJudge(t *testing.T) {
	tests := []struct {
		name          string
		before, after Measure
		threshold     float64
		verdict       Verdict
		detail        string
		rule          Rule
	}{
		{"only in the new run", none, passed(100, 0.01), 0.05, Added, "", ""},
		{"only in the old run", passed(100, 0.01), none, 0.05, Removed, "", ""},
		{"in neither", none, none, 0.05, Absent, "", ""},

		{"pass then FAIL, although faster", passed(100, 0.001), failed, 0.05, Regression, "pass → FAIL", ""},
		{"pass then ERROR", passed(100, 0.001), row(results.StatusError, unknown, unknown), 0.05, Regression, "pass → ERROR", ""},
		{"FAIL then pass, although slower", failed, passed(200, 0.001), 0.05, Fixed, "FAIL → pass", ""},
		{"ERROR then pass", row(results.StatusError, unknown, unknown), passed(100, 0.001), 0.05, Fixed, "ERROR → pass", ""},
		{"FAIL then ERROR", failed, row(results.StatusError, unknown, unknown), 0.05, NotCompared, "FAIL → ERROR", ""},
		{"FAIL in both", failed, failed, 0.05, NotCompared, "FAIL in both", ""},
		{"SKIP then pass", row(results.StatusSkip, unknown, unknown), passed(100, 0.001), 0.05, NotCompared, "SKIP → pass", ""},
		{"pass then SKIP", passed(100, 0.001), row(results.StatusSkip, unknown, unknown), 0.05, NotCompared, "pass → SKIP", ""},
		{"zero median before", passed(0, unknown), passed(100, 0.001), 0.05, NotCompared, "no kernel time in old", ""},
		{"no median after", passed(100, 0.001), passed(unknown, unknown), 0.05, NotCompared, "no kernel time in new", ""},

		// The rank test, on the raw samples.
		{"samples: the same", sampled(100, 20, 0.02), sampled(100, 20, 0.02), 0.05, Same, "", RankTest},
		{"samples: 10% slower", sampled(100, 20, 0.02), sampled(110, 20, 0.02), 0.05, Slower, "", RankTest},
		{"samples: 20% faster", sampled(100, 20, 0.02), sampled(80, 20, 0.02), 0.05, Faster, "", RankTest},
		{"samples: 3% slower is within 5%", sampled(100, 20, 0.01), sampled(103, 20, 0.01), 0.05, Same, "", RankTest},
		{"samples: 4.5% slower may be beyond 5%", sampled(100, 20, 0.1), sampled(104.5, 20, 0.1), 0.05, Unsure, "interval reaches beyond ±5%", RankTest},
		{"samples: 6% slower in 40% noise", sampled(100, 20, 0.4), sampled(106, 20, 0.4), 0.05, Unsure, "interval reaches beyond ±5%", RankTest},
		{"samples: three a side cannot say same", sampled(100, 3, 0.001), sampled(100, 3, 0.001), 0.05, Unsure, "too few samples: 3 and 3", RankTest},
		{"samples: three a side cannot say slower", sampled(100, 3, 0.001), sampled(150, 3, 0.001), 0.05, Unsure, "too few samples: 3 and 3", RankTest},
		{"samples: zero threshold, a real 1% change", sampled(100, 30, 0.002), sampled(101, 30, 0.002), 0, Slower, "", RankTest},
		{"samples on one side: the summary rule", sampled(100, 20, 0.002), passed(110, 0.001), 0.05, Slower, "", SummaryRule},

		// Placements: each one's median is a sample of the test. Placements
		// that sit 8% apart within each run make a 4% shift between runs
		// unsure, which the samples one by one (tight within each
		// placement) would call slower.
		{"placements: a shift within their spread", placed(10, 1000, 1080, 1000, 1040, 1010), placed(10, 1080, 1070, 1040, 1080, 1050), 0.05, Unsure, "interval reaches beyond ±5%", PlacementTest},
		{"placements: 10% slower in every one", placed(10, 1000, 1010, 1005, 995, 1000), placed(10, 1100, 1110, 1105, 1095, 1100), 0.05, Slower, "", PlacementTest},
		{"placements: the same", placed(10, 1000, 1010, 1005, 995, 1000), placed(10, 1002, 1008, 1000, 997, 1004), 0.05, Same, "", PlacementTest},
		{"placements: three a side bound nothing", placed(10, 1000, 1000, 1000), placed(10, 1500, 1500, 1500), 0.05, Unsure, "too few placements: 3 and 3", PlacementTest},
		{"placements on one side only: the samples", placed(10, 1000, 1000, 1000), sampled(1100, 20, 0.002), 0.05, Slower, "", RankTest},

		// The summary rule, for rows without samples.
		{"within the threshold", passed(100, 0.001), passed(104, 0.001), 0.05, Same, "", SummaryRule},
		{"beyond both: slower", passed(100, 0.002), passed(110, 0.002), 0.05, Slower, "", SummaryRule},
		{"beyond both: faster", passed(100, 0.002), passed(80, 0.002), 0.05, Faster, "", SummaryRule},
		{"beyond the threshold, within the noise", passed(100, 0.05), passed(108, 0.04), 0.05, Unsure, "interval reaches beyond ±5%", SummaryRule},
		{"beyond the noise, but its interval reaches within the threshold", passed(100, 0.03), passed(108, 0.04), 0.05, Unsure, "interval reaches beyond ±5%", SummaryRule},
		{"beyond the threshold and the noise", passed(100, 0.01), passed(108, 0.01), 0.05, Slower, "", SummaryRule},
		{"samples: 7% slower, the interval reaching within 5%", sampled(100, 30, 0.15), sampled(107, 30, 0.15), 0.05, Unsure, "interval reaches beyond ±5%", RankTest},
		{"faster, within the noise", passed(100, 0.10), passed(85, 0.10), 0.05, Unsure, "interval reaches beyond ±5%", SummaryRule},
		{"within the threshold, but noisy", passed(100, 0.04), passed(101, 0.04), 0.05, Unsure, "interval reaches beyond ±5%", SummaryRule},
		// Exactly at a limit is not beyond it (binary-exact figures).
		{"exactly at the threshold", passed(100, 0), passed(125, 0), 0.25, Same, "", SummaryRule},
		{"exactly at the noise", passed(100, 0.125), passed(125, 0.125), 0, Unsure, "interval reaches beyond ±0%", SummaryRule},
		{"zero threshold, zero noise", passed(100, 0), passed(101, 0), 0, Slower, "", SummaryRule},
		// Unknown noise bounds nothing: unsure, never same.
		{"unknown noise before", passed(100, unknown), passed(108, 0.01), 0.05, Unsure, "noise unknown", SummaryRule},
		{"unknown noise on both sides", passed(100, unknown), passed(101, unknown), 0.05, Unsure, "noise unknown", SummaryRule},
		{"negative noise is unknown", passed(100, -1), passed(108, 0.01), 0.05, Unsure, "noise unknown", SummaryRule},
		{"infinite noise is unknown", passed(100, math.Inf(1)), passed(108, 0.01), 0.05, Unsure, "noise unknown", SummaryRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge(tt.before, tt.after, tt.threshold)
			if got.Verdict != tt.verdict || got.Detail != tt.detail || got.Rule != tt.rule {
				t.Errorf("judge = %q (%q) by %q, want %q (%q) by %q (ratio %v in [%v, %v], p %v)",
					got.Verdict, got.Detail, got.Rule, tt.verdict, tt.detail, tt.rule, got.Ratio, got.Low, got.High, got.PValue)
			}
			timedVerdict := tt.rule != ""
			if timedVerdict != finite(got.Ratio) {
				t.Errorf("ratio %v for verdict %q: want a ratio exactly for timed pairs", got.Ratio, got.Verdict)
			}
			if timedVerdict && !(got.Low <= got.Ratio && got.Ratio <= got.High) {
				t.Errorf("ratio %v outside its interval [%v, %v]", got.Ratio, got.Low, got.High)
			}
		})
	}
}

func TestJudgeRatioIsNewOverOld(t *testing.T) {
	got := judge(passed(200, 0.01), passed(150, 0.02), 0.05)
	if got.Ratio != 0.75 || math.Abs(got.Noise-0.03) > 1e-15 || math.Abs(got.Low-0.72) > 1e-12 || math.Abs(got.High-0.78) > 1e-12 {
		t.Errorf("ratio %v in [%v, %v], noise %v; want 0.75 in [0.72, 0.78] and 0.03", got.Ratio, got.Low, got.High, got.Noise)
	}
	got = judge(sampled(200, 10, 0.01), sampled(150, 10, 0.01), 0.05)
	if math.Abs(got.Ratio-0.75) > 1e-12 || got.Low > 0.75 || got.High < 0.75 || got.PValue > 0.001 {
		t.Errorf("by rank test: ratio %v in [%v, %v], p %v; want 0.75 inside, p tiny", got.Ratio, got.Low, got.High, got.PValue)
	}
}
