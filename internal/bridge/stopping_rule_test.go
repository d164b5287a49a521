package bridge

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite testdata/stopping_rule.json's expected figures from sdk")

// stoppingRuleFixture is testdata/stopping_rule.json, which the Python
// worker's tests (python/tests/test_sampling.py) read too: both languages
// must take the same samples and compute the same noise.
type stoppingRuleFixture struct {
	Comment string         `json:"comment"`
	Collect []collectCase  `json:"collect"`
	Noise   []noiseFixture `json:"noise"`
}

type collectCase struct {
	Name        string          `json:"name"`
	Measurement sdk.Measurement `json:"measurement"`
	SamplesNS   []int64         `json:"samples_ns"` // fed in order, warm-up first
	WantTaken   int             `json:"want_taken"` // timed samples kept
	WantNoise   float64         `json:"want_noise"` // RelativeNoise of those
	WantStop    string          `json:"want_stop"`  // why sampling stopped (sdk.StopNoise, ...)
}

type noiseFixture struct {
	SamplesNS []int64 `json:"samples_ns"`
	Want      float64 `json:"want"` // -1 stands for +Inf (JSON has no Inf)
}

const fixturePath = "testdata/stopping_rule.json"

func TestStoppingRuleFixtureMatchesSDK(t *testing.T) {
	fixture := readFixture(t)
	if *update {
		fixture = newFixture()
	}
	for i, c := range fixture.Collect {
		taken, noise, stop := collect(t, c)
		if *update {
			fixture.Collect[i].WantTaken, fixture.Collect[i].WantNoise, fixture.Collect[i].WantStop = taken, jsonFloat(noise), stop
			continue
		}
		if taken != c.WantTaken || !sameFloat(jsonFloat(noise), c.WantNoise) || stop != c.WantStop {
			t.Errorf("%s: sdk took %d samples with noise %v, stopped by %q; fixture says %d, %v and %q",
				c.Name, taken, noise, stop, c.WantTaken, c.WantNoise, c.WantStop)
		}
	}
	for i, n := range fixture.Noise {
		got := jsonFloat(sdk.RelativeNoise(durations(n.SamplesNS)))
		if *update {
			fixture.Noise[i].Want = got
			continue
		}
		if !sameFloat(got, n.Want) {
			t.Errorf("RelativeNoise(%d samples) = %v, fixture says %v", len(n.SamplesNS), got, n.Want)
		}
	}
	if *update {
		writeFixture(t, fixture)
	}
}

// Figures the fixture must show whatever -update wrote: a steady sample
// stops at the first check after min_samples, a noisy one runs to
// max_samples.
func TestStoppingRuleFixtureCoversTheRule(t *testing.T) {
	want := map[string]int{"steady": 20, "steady, min 7": 10, "alternating": 40, "max below min": 12, "min 0": 6,
		"steady, min 2": 6, "one outlier, min 2": 15}
	stops := map[string]bool{}
	for _, c := range readFixture(t).Collect {
		if taken, ok := want[c.Name]; ok && c.WantTaken != taken {
			t.Errorf("%s: fixture says %d samples, the rule gives %d", c.Name, c.WantTaken, taken)
		}
		stops[c.WantStop] = true
	}
	// The time cap depends on the clock, not the samples: the Python
	// tests check it with a fake clock.
	for _, stop := range []string{sdk.StopNoise, sdk.StopMax} {
		if !stops[stop] {
			t.Errorf("no case of the fixture stops by %q", stop)
		}
	}
}

// collect runs sdk.CollectSamples over the case's fixed samples; stop is
// why it stopped, as its phases say.
func collect(t *testing.T, c collectCase) (taken int, noise float64, stop string) {
	t.Helper()
	next := 0
	sample := func(context.Context) (time.Duration, error) {
		if next == len(c.SamplesNS) {
			t.Fatalf("%s: the rule wants more than the fixture's %d samples", c.Name, len(c.SamplesNS))
		}
		next++
		return time.Duration(c.SamplesNS[next-1]), nil
	}
	clock := sdk.NewPhaseClock()
	samples, err := sdk.CollectSamples(sdk.WithPhaseClock(context.Background(), clock), c.Measurement, sample)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range clock.Phases() {
		if rest, ok := strings.CutPrefix(p.Name, sdk.PhaseSample+":"); ok {
			stop = rest
		}
	}
	return len(samples), sdk.RelativeNoise(samples), stop
}

func newFixture() stoppingRuleFixture {
	rule := func(warmups, minSamples, maxSamples int, target float64) sdk.Measurement {
		// No warm-up time and no time cap: the rule then depends on the
		// samples alone, so both languages must agree exactly.
		return sdk.Measurement{WarmupRuns: warmups, MinSamples: minSamples, MaxSamples: maxSamples, TargetNoise: target}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	return stoppingRuleFixture{
		Comment: "Written by `go test ./internal/bridge -run StoppingRule -update`; read by python/tests/test_sampling.py.",
		Collect: []collectCase{
			{Name: "steady", Measurement: rule(3, 20, 40, 0.01), SamplesNS: steady(60, 7400)},
			{Name: "steady, min 7", Measurement: rule(2, 7, 40, 0.01), SamplesNS: steady(60, 7400)},
			{Name: "alternating", Measurement: rule(0, 20, 40, 0.01), SamplesNS: alternating(60, 7000, 9000)},
			{Name: "max below min", Measurement: rule(1, 12, 5, 0.01), SamplesNS: steady(60, 212000)},
			{Name: "min 0", Measurement: rule(0, 0, 40, 0.01), SamplesNS: steady(60, 3500)},
			{Name: "noisy settling", Measurement: rule(5, 20, 400, 0.005), SamplesNS: settling(rng, 420)},
			{Name: "noisy to max", Measurement: rule(5, 20, 120, 0.001), SamplesNS: noisy(rng, 130, 10000, 0.05)},
			{Name: "steady, min 2", Measurement: rule(1, 2, 40, 0.005), SamplesNS: steady(60, 7400)},
			{Name: "one outlier, min 2", Measurement: rule(1, 2, 40, 0.005), SamplesNS: withOutlier(steady(60, 7400), 6, 9000)},
		},
		Noise: []noiseFixture{
			{SamplesNS: noisy(rng, 5, 1000, 0.1)},
			{SamplesNS: noisy(rng, 6, 1000, 0.1)},
			{SamplesNS: noisy(rng, 7, 1000, 0.1)},
			{SamplesNS: noisy(rng, 20, 7400, 0.02)},
			{SamplesNS: noisy(rng, 101, 212000, 0.03)},
			{SamplesNS: steady(10, 0)},
		},
	}
}

// withOutlier sets sample i (counting the warm-up runs) to ns.
func withOutlier(samples []int64, i int, ns int64) []int64 {
	samples[i] = ns
	return samples
}

func steady(n int, ns int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = ns
	}
	return out
}

func alternating(n int, a, b int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = a
		if i%2 == 1 {
			out[i] = b
		}
	}
	return out
}

func noisy(rng *rand.Rand, n int, median int64, spread float64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(float64(median) * (1 + spread*rng.NormFloat64()))
	}
	return out
}

// settling is noise that narrows: a rule with a tight target stops part way.
func settling(rng *rand.Rand, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		spread := 0.2 / (1 + float64(i)/20)
		out[i] = int64(10000 * (1 + spread*rng.NormFloat64()))
	}
	return out
}

func durations(ns []int64) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n)
	}
	return out
}

// jsonFloat writes +Inf as -1, which no noise figure can be.
func jsonFloat(x float64) float64 {
	if math.IsInf(x, 1) {
		return -1
	}
	return x
}

func sameFloat(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-12*math.Abs(b) }

func readFixture(t *testing.T) stoppingRuleFixture {
	t.Helper()
	var f stoppingRuleFixture
	raw, err := os.ReadFile(fixturePath)
	if err != nil {
		if *update {
			return f
		}
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", fixturePath, err)
	}
	return f
}

func writeFixture(t *testing.T, f stoppingRuleFixture) {
	t.Helper()
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
