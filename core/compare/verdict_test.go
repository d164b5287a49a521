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

// TestJudge is the verdict rule: correctness first, then a time change
// counts only beyond both the threshold and the two rows' noise added.
func TestJudge(t *testing.T) {
	tests := []struct {
		name          string
		before, after Measure
		threshold     float64
		verdict       Verdict
		detail        string
		noiseUnknown  bool
	}{
		{"only in the new run", none, passed(100, 0.01), 0.05, Added, "", false},
		{"only in the old run", passed(100, 0.01), none, 0.05, Removed, "", false},
		{"in neither", none, none, 0.05, Absent, "", false},

		{"pass then FAIL, although faster", passed(100, 0.001), failed, 0.05, Regression, "pass → FAIL", false},
		{"pass then ERROR", passed(100, 0.001), row(results.StatusError, unknown, unknown), 0.05, Regression, "pass → ERROR", false},
		{"FAIL then pass, although slower", failed, passed(200, 0.001), 0.05, Fixed, "FAIL → pass", false},
		{"ERROR then pass", row(results.StatusError, unknown, unknown), passed(100, 0.001), 0.05, Fixed, "ERROR → pass", false},
		{"FAIL then ERROR", failed, row(results.StatusError, unknown, unknown), 0.05, NotCompared, "FAIL → ERROR", false},
		{"FAIL in both", failed, failed, 0.05, NotCompared, "FAIL in both", false},
		{"SKIP then pass", row(results.StatusSkip, unknown, unknown), passed(100, 0.001), 0.05, NotCompared, "SKIP → pass", false},
		{"pass then SKIP", passed(100, 0.001), row(results.StatusSkip, unknown, unknown), 0.05, NotCompared, "pass → SKIP", false},
		{"zero median before", passed(0, unknown), passed(100, 0.001), 0.05, NotCompared, "no kernel time in old", false},
		{"no median after", passed(100, 0.001), passed(unknown, unknown), 0.05, NotCompared, "no kernel time in new", false},

		{"within the threshold", passed(100, 0.001), passed(104, 0.001), 0.05, Same, "", false},
		{"beyond both: slower", passed(100, 0.002), passed(110, 0.002), 0.05, Slower, "", false},
		{"beyond both: faster", passed(100, 0.002), passed(80, 0.002), 0.05, Faster, "", false},
		{"beyond the threshold, within the noise", passed(100, 0.05), passed(108, 0.04), 0.05, Same, "within noise ±9.0%", false},
		{"beyond the threshold and the noise", passed(100, 0.03), passed(108, 0.04), 0.05, Slower, "", false},
		{"faster, within the noise", passed(100, 0.10), passed(85, 0.10), 0.05, Same, "within noise ±20.0%", false},
		// Exactly at a limit is not beyond it (binary-exact figures).
		{"exactly at the threshold", passed(100, 0), passed(125, 0), 0.25, Same, "", false},
		{"exactly at the noise", passed(100, 0.125), passed(125, 0.125), 0, Same, "within noise ±25.0%", false},
		{"zero threshold, zero noise", passed(100, 0), passed(101, 0), 0, Slower, "", false},
		// Unknown noise counts as 0, and the change says so.
		{"unknown noise before counts as 0", passed(100, unknown), passed(108, 0.01), 0.05, Slower, "", true},
		{"unknown noise on both sides", passed(100, unknown), passed(103, unknown), 0.05, Same, "", true},
		{"negative noise is unknown", passed(100, -1), passed(108, 0.01), 0.05, Slower, "", true},
		{"infinite noise is unknown", passed(100, math.Inf(1)), passed(108, 0.01), 0.05, Slower, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge(tt.before, tt.after, tt.threshold)
			if got.Verdict != tt.verdict || got.Detail != tt.detail || got.NoiseUnknown != tt.noiseUnknown {
				t.Errorf("judge = %q (%q, noise unknown %v), want %q (%q, noise unknown %v)",
					got.Verdict, got.Detail, got.NoiseUnknown, tt.verdict, tt.detail, tt.noiseUnknown)
			}
			timedVerdict := tt.verdict == Faster || tt.verdict == Slower || tt.verdict == Same
			if timedVerdict != finite(got.Ratio) {
				t.Errorf("ratio %v for verdict %q: want a ratio exactly for faster, slower and same", got.Ratio, got.Verdict)
			}
		})
	}
}

func TestJudgeRatioIsNewOverOld(t *testing.T) {
	got := judge(passed(200, 0.01), passed(150, 0.02), 0.05)
	if got.Ratio != 0.75 || math.Abs(got.Noise-0.03) > 1e-15 {
		t.Errorf("ratio %v, noise %v; want 0.75 and 0.03", got.Ratio, got.Noise)
	}
}
