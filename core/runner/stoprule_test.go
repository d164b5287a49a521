package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/sdk"
)

// steady is n samples of about d, spread by ±spread ns in a fixed pattern.
func steady(n int, d time.Duration, spread int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d + time.Duration((i*7)%(2*spread+1)-spread)
	}
	return out
}

// noisy is n samples whose noise never meets a 0.5% target.
func noisy(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d + time.Duration(i%4)*d/10
	}
	return out
}

// outlier makes the first of samples a tenth slower: the noise's interval
// holds it until the rule's third check (6 and 10 samples: it is their
// largest, which both intervals reach).
func outlier(samples []time.Duration) []time.Duration {
	samples[0] += samples[0] / 10
	return samples
}

func TestStopRuleViolation(t *testing.T) {
	m := sdk.Measurement{MinSamples: 6, MaxSamples: 40, TargetNoise: 0.005, TimeCap: 100 * time.Millisecond, Placements: 1}
	placed := m
	placed.Placements, placed.MinSamples, placed.MaxSamples = 2, 12, 80
	us := time.Microsecond
	tests := []struct {
		name    string
		s       sdk.Samples
		m       sdk.Measurement
		runWall time.Duration
		want    string // "" or a part of the reason
	}{
		{"stopped at the noise target", sdk.Samples{KernelTimes: steady(6, 10*us, 3)}, m, time.Second, ""},
		{"went on past the noise target", sdk.Samples{KernelTimes: steady(25, 10*us, 3)}, m, time.Second, "the stopping rule ends at 6"},
		{"an outlier, stopped at the third check", sdk.Samples{KernelTimes: outlier(steady(15, 10*us, 3))}, m, time.Second, ""},
		{"an outlier, went on past the third check", sdk.Samples{KernelTimes: outlier(steady(20, 10*us, 3))}, m, time.Second, "the stopping rule ends at 15"},
		{"stopped at max_samples", sdk.Samples{KernelTimes: noisy(40, 10*us)}, m, time.Second, ""},
		{"stopped at the time cap, the host saw it", sdk.Samples{KernelTimes: noisy(17, 10*us)}, m, 150 * time.Millisecond, ""},
		{"claimed the time cap, the host saw less", sdk.Samples{KernelTimes: noisy(17, 10*us)}, m, 30 * time.Millisecond, "which only its time cap allows (100ms in all)"},
		{"no host clock, no time-cap check", sdk.Samples{KernelTimes: noisy(17, 10*us)}, m, 0, ""},
		{"short of min_samples", sdk.Samples{KernelTimes: steady(5, 10*us, 3)}, m, time.Second, "the stopping rule takes at least 6"},
		{"blocks, each at its target", sdk.Samples{KernelTimes: append(steady(6, 10*us, 3), steady(6, 11*us, 3)...), KernelBlocks: []int{6, 6}}, placed, time.Second, ""},
		{"a block went on", sdk.Samples{KernelTimes: append(steady(6, 10*us, 3), steady(30, 11*us, 3)...), KernelBlocks: []int{6, 30}}, placed, time.Second, "placement block 2 went on to 30"},
		{"blocks' time caps add up", sdk.Samples{KernelTimes: append(noisy(7, 10*us), noisy(9, 10*us)...), KernelBlocks: []int{7, 9}}, placed, 80 * time.Millisecond, "(100ms in all)"},
		{"a merged block is not replayed", sdk.Samples{KernelTimes: steady(25, 10*us, 3), KernelBlocks: []int{25}}, placed, time.Second, ""},
		{"the cross-check holds the figures the rule saw",
			sdk.Samples{KernelTimes: steady(25, 10*us, 3), CrossCheckTimes: noisy(25, 10*us),
				Facts: map[string]string{sdk.FactCUPTIFallback: "CUPTI missed device time"}}, m, time.Second, ""},
		{"a cross-check that keeps the rule is no excuse where the Run swapped nothing",
			sdk.Samples{KernelTimes: steady(25, 10*us, 3), CrossCheckTimes: noisy(25, 10*us)}, m, time.Second, "the stopping rule ends at 6"},
		{"neither sequence keeps the rule",
			sdk.Samples{KernelTimes: steady(25, 10*us, 3), CrossCheckTimes: steady(25, 10*us, 3)}, m, time.Second, "the stopping rule ends at 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StopRuleViolation(tt.s, tt.m, tt.runWall)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("StopRuleViolation = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStopRuleAgreesWithTheSDK: samples the SDK's own rule took are never
// refused, whether it stopped at the noise target, max_samples or the
// time cap, in one block or several.
func TestStopRuleAgreesWithTheSDK(t *testing.T) {
	for _, tt := range []struct {
		name   string
		m      sdk.Measurement
		sample func(i int) time.Duration
	}{
		{"steady", sdk.Measurement{MinSamples: 6, MaxSamples: 500, TargetNoise: 0.005, TimeCap: time.Second}, func(i int) time.Duration { return 10000 + time.Duration(i%3) }},
		{"noisy to max", sdk.Measurement{MinSamples: 6, MaxSamples: 37, TargetNoise: 0.005, TimeCap: time.Minute}, func(i int) time.Duration { return 10000 + time.Duration(i%4)*1000 }},
		{"noisy to the cap", sdk.Measurement{MinSamples: 6, MaxSamples: 100000, TargetNoise: 0.005, TimeCap: 20 * time.Millisecond}, func(i int) time.Duration {
			time.Sleep(100 * time.Microsecond)
			return 10000 + time.Duration(i%4)*1000
		}},
		{"placed", sdk.Measurement{MinSamples: 20, MaxSamples: 2000, TargetNoise: 0.005, TimeCap: time.Second, Placements: 5}, func(i int) time.Duration { return 3000 + time.Duration(i%7) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			sample := func(ctx context.Context) (time.Duration, error) { i++; return tt.sample(i), nil }
			start := time.Now()
			kernel, blocks, err := sdk.CollectPlacedSamples(context.Background(), tt.m, sample, func(context.Context, int) error { return nil })
			wall := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if why := StopRuleViolation(sdk.Samples{KernelTimes: kernel, KernelBlocks: blocks}, tt.m, wall); why != "" {
				t.Errorf("the SDK's own samples (%d, blocks %v) refused: %s", len(kernel), blocks, why)
			}
		})
	}
}
