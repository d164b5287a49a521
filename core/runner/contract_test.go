package runner

import (
	"context"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

const twoModesSuite = `
name = "two-modes"
[measurement]
l2 = ["hot", "cold"]
warmup_runs = 4
warmup_time = "20ms"
min_samples = 6
time_cap = "100ms"
cpu_time_cap = "30ms"
cpu_min_samples = 4
call_samples = 3
[[cases]]
batch = 1
heads = 2
seq_q = 64
head_dim = 64
`

// TestEachRunIsAskedForItsContract runs a real plugin process
// (test-tunables, whose kernel is real attention on the CPU, and which
// reports the measurement each Run was asked for) as a CPU backend and as
// one that claims a GPU, and checks what the host asks: the suite's
// warm-up for a row's first Run and the resumed warm-up
// (sdk.ResumedWarmUp) for the next L2 mode's; cpu_time_cap and
// cpu_min_samples for the CPU row's Runs, time_cap and min_samples for the
// GPU row's.
func TestEachRunIsAskedForItsContract(t *testing.T) {
	plugins := []host.Plugin{{Name: "test-tunables", Path: buildtest.Plugin(t, "test-tunables", "internal/testplugins/tunables")}}
	s, err := suite.Parse("two-modes.toml", []byte(twoModesSuite))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		device, timeCap, minSamples string
	}{
		{"cpu", "30ms", "4"},
		{"gpu", "100ms", "6"},
	}
	for _, tt := range tests {
		t.Run(tt.device, func(t *testing.T) {
			if tt.device == "gpu" {
				t.Setenv("FLASHCORE_TEST_TUNABLES_CLAIM_GPU", "yes")
			}
			run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if run.Suite.CPUTimeCap.String() != "30ms" || run.Suite.CPUMinSamples != 4 {
				t.Errorf("results' suite cpu_time_cap %v, cpu_min_samples %d; want 30ms, 4", run.Suite.CPUTimeCap, run.Suite.CPUMinSamples)
			}
			r := find(run, s.Cases[0].ID, "test-tunables")
			if r == nil || len(r.Timings) != 2 {
				t.Fatalf("row %+v: want two timed L2 modes", r)
			}
			want := []struct{ mode, runs, time string }{
				{"hot", "4", "20ms"},
				{"cold", "1", "0s"}, // 4 runs over 5 placements: one run, no time
			}
			for i, w := range want {
				got := r.Timings[i]
				if string(got.L2) != w.mode || got.Facts["asked_warmup_runs"] != w.runs || got.Facts["asked_warmup_time"] != w.time ||
					got.Facts["asked_time_cap"] != tt.timeCap || got.Facts["asked_min_samples"] != tt.minSamples {
					t.Errorf("Run %d: L2 %s asked warm-up %s runs %s, time cap %s, min_samples %s; want L2 %s, %s runs %s, time cap %s, min_samples %s",
						i+1, got.L2, got.Facts["asked_warmup_runs"], got.Facts["asked_warmup_time"], got.Facts["asked_time_cap"], got.Facts["asked_min_samples"],
						w.mode, w.runs, w.time, tt.timeCap, tt.minSamples)
				}
			}
			if r.Status != results.StatusPass {
				t.Errorf("status %s: %s", r.Status, r.Reason)
			}
		})
	}
}
