package compare

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
)

var plant = flag.Bool("plant", false, "rewrite the planted fixtures from testdata/samples-base.json")

// The rank-test fixtures. samples-base.json is a real run of
// testdata/samples.toml (cpu-reference and pytorch-sdpa on a 2-core CPU,
// raw samples kept), with the machine's checkout path cut from the
// plugin paths. The other two are made from it by TestPlantFixtures:
// samples-resampled.json draws every row's samples again from its own
// samples (a bootstrap: the same distribution, other noise), and
// samples-planted.json does the same with every cpu-reference sample made
// 10% slower, and one row that now FAILs: the two planted changes.
var (
	samplesBase      = filepath.Join("testdata", "samples-base.json")
	samplesResampled = filepath.Join("testdata", "samples-resampled.json")
	samplesPlanted   = filepath.Join("testdata", "samples-planted.json")
)

const plantedSlowBackend = "cpu-reference"

var plantedFail = rowKey{"b1-h2-s128-d32-fp32", "sdpa-flash"}

// TestPlantFixtures rewrites the fixtures made from samples-base.json when
// run with -plant; otherwise it checks that they are what it would write.
func TestPlantFixtures(t *testing.T) {
	base := load(t, samplesBase)[0].Run
	resampled := resampleRun(base, 1, func(*results.Result) float64 { return 1 })
	planted := resampleRun(base, 2, func(r *results.Result) float64 {
		if r.Backend == plantedSlowBackend {
			return 1.10
		}
		return 1
	})
	plantFailure(planted)
	for path, run := range map[string]*results.Run{samplesResampled: resampled, samplesPlanted: planted} {
		data, err := results.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		if *plant {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		compareGolden(t, path, data)
	}
}

// resampleRun is a copy of run in which every row's samples are drawn
// again, with replacement, from its own samples and multiplied by
// scale(row), and its stats follow them.
func resampleRun(run *results.Run, seed uint64, scale func(*results.Result) float64) *results.Run {
	rng := rand.New(rand.NewPCG(seed, 2026))
	out := *run
	out.Results = make([]results.Result, len(run.Results))
	for i, r := range run.Results {
		r.Timings = append([]results.Timing(nil), r.Timings...)
		for j := range r.Timings {
			r.Timings[j] = resampleTiming(r.Timings[j], rng, scale(&r))
		}
		out.Results[i] = r
	}
	return &out
}

// resampleTiming draws t's samples again, each multiplied by scale.
func resampleTiming(t results.Timing, rng *rand.Rand, scale float64) results.Timing {
	if t.Samples == nil {
		return t
	}
	s := results.Samples{
		KernelNs:     redraw(t.Samples.KernelNs, rng, scale),
		CallNs:       redraw(t.Samples.CallNs, rng, scale),
		CrossCheckNs: redraw(t.Samples.CrossCheckNs, rng, scale),
	}
	t.Samples = &s
	t.Kernel = summary(s.KernelNs)
	if len(s.CallNs) > 0 {
		t.Call = summary(s.CallNs)
	}
	if len(s.CrossCheckNs) > 0 {
		cross := summary(s.CrossCheckNs)
		t.CrossCheck = &cross
	}
	return t
}

func redraw(samples []int64, rng *rand.Rand, scale float64) []int64 {
	if len(samples) == 0 {
		return nil
	}
	out := make([]int64, len(samples))
	for i := range out {
		out[i] = int64(float64(samples[rng.IntN(len(samples))])*scale + 0.5)
	}
	return out
}

func summary(ns []int64) results.Stats {
	d := make([]time.Duration, len(ns))
	for i, v := range ns {
		d[i] = time.Duration(v)
	}
	s := stats.Summarize(d)
	return results.Stats{N: s.N, MedianNs: float64(s.Median), MeanNs: float64(s.Mean), StdevNs: float64(s.Stdev),
		MinNs: float64(s.Min), MaxNs: float64(s.Max), P10Ns: float64(s.P10), P90Ns: float64(s.P90), RelNoise: s.RelNoise}
}

// plantFailure makes the plantedFail row a FAIL, as a wrong kernel would
// leave it, in a run taken a day later.
func plantFailure(run *results.Run) {
	run.StartedAt = run.StartedAt.Add(24 * time.Hour)
	run.FinishedAt = run.FinishedAt.Add(24 * time.Hour)
	for i := range run.Results {
		r := &run.Results[i]
		if r.CaseID == plantedFail.caseID && r.RowLabel() == plantedFail.name {
			check := *r.Check
			check.Violations = 12
			r.Status, r.Check = results.StatusFail, &check
			r.Reason = "12 of 8192 elements out of tolerance (worst |o-r| 0.031 at b0 h1 q77 d3, |r| 0.52)"
		}
	}
}

// flagged lists the rows a comparison calls out: faster, slower,
// REGRESSION or FIXED, by case and row name.
func flagged(c *Comparison) map[rowKey]Verdict {
	out := map[rowKey]Verdict{}
	for _, r := range c.Rows {
		for _, ch := range r.Changes {
			switch ch.Verdict {
			case Faster, Slower, Regression, Fixed:
				out[rowKey{r.CaseID, r.Name}] = ch.Verdict
			}
		}
	}
	return out
}

// TestPlantedChangesAreFound compares the real run with its planted copy:
// exactly the planted changes are flagged (every cpu-reference row slower,
// the one FAIL a REGRESSION), and every output format shows them.
func TestPlantedChangesAreFound(t *testing.T) {
	sources := load(t, samplesBase, samplesPlanted)
	c, err := Compare(sources, Options{Threshold: DefaultThreshold, Labels: []string{"base", "planted"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[rowKey]Verdict{plantedFail: Regression}
	for _, r := range c.Rows {
		if r.Backend == plantedSlowBackend {
			want[rowKey{r.CaseID, r.Name}] = Slower
		}
	}
	got := flagged(c)
	if len(want) != 5 || len(got) != len(want) {
		t.Errorf("flagged %v, want exactly %v", got, want)
	}
	for key, verdict := range want {
		if got[key] != verdict {
			t.Errorf("%s %s: %q, want %q", key.caseID, key.name, got[key], verdict)
		}
	}
}

// TestSelfCompareFlagsNothing: the run against itself and against its
// resampled copy flags no row. Fifty more resamplings of its own noise
// measure the rate of false flags, which must stay under 1% of the timed
// pairs: a bootstrap of heavy-tailed CPU samples sometimes draws a set
// that is slower in earnest (2 of 800 pairs when written).
func TestSelfCompareFlagsNothing(t *testing.T) {
	base := load(t, samplesBase)[0]
	for _, other := range []Source{base, load(t, samplesResampled)[0]} {
		c, err := Compare([]Source{base, other}, Options{Threshold: DefaultThreshold})
		if err != nil {
			t.Fatal(err)
		}
		if got := flagged(c); len(got) > 0 {
			t.Errorf("%s against %s flags %v", base.Path, other.Path, got)
		}
	}
	falseFlags, pairs := 0, 0
	for seed := range uint64(50) {
		other := Source{Path: "resampled", Run: resampleRun(base.Run, 100+seed, func(*results.Result) float64 { return 1 })}
		c, err := Compare([]Source{base, other}, Options{Threshold: DefaultThreshold})
		if err != nil {
			t.Fatal(err)
		}
		falseFlags += len(flagged(c))
		total := c.Total()
		pairs += total.Faster + total.Slower + total.Same + total.Unsure
	}
	t.Logf("%d false flags in %d timed pairs", falseFlags, pairs)
	if falseFlags*100 > pairs {
		t.Errorf("%d false flags in %d timed pairs of a run against resamplings of itself, want under 1%%", falseFlags, pairs)
	}
}

// TestCPURowsAreJudgedByTheCPUThreshold: rows timed on a CPU are judged
// by the CPU threshold, the others by the threshold. samples-base.json is
// a CPU run: its planted 10% on cpu-reference is slower against ±5%, and
// not called against ±35%, where only the regression (a FAIL, whatever
// the times) is flagged; a 60% slowdown is slower against either. Each
// change records the threshold it was judged by.
func TestCPURowsAreJudgedByTheCPUThreshold(t *testing.T) {
	base := load(t, samplesBase)[0]
	planted := load(t, samplesPlanted)[0]
	muchSlower := Source{Path: "much-slower", Run: resampleRun(base.Run, 7, func(r *results.Result) float64 {
		if r.Backend == plantedSlowBackend {
			return 1.6
		}
		return 1
	})}
	tests := []struct {
		name         string
		other        Source
		cpuThreshold float64
		wantSlower   bool // every cpu-reference row slower; else none flagged but by correctness
		wantJudgedBy float64
	}{
		{"10% against the threshold (CPU threshold 0)", planted, 0, true, DefaultThreshold},
		{"10% against 5% given as the CPU threshold", planted, 0.05, true, 0.05},
		{"10% against the default CPU threshold", planted, DefaultCPUThreshold, false, DefaultCPUThreshold},
		{"60% against the default CPU threshold", muchSlower, DefaultCPUThreshold, true, DefaultCPUThreshold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compare([]Source{base, tt.other}, Options{Threshold: DefaultThreshold, CPUThreshold: tt.cpuThreshold})
			if err != nil {
				t.Fatal(err)
			}
			slower := 0
			for _, r := range c.Rows {
				if !r.OnCPU() {
					t.Errorf("%s %s: not on a CPU, in a run of CPU backends", r.CaseID, r.Name)
				}
				ch := r.Changes[0]
				if ch.Threshold != tt.wantJudgedBy {
					t.Errorf("%s %s: judged by %v, want %v", r.CaseID, r.Name, ch.Threshold, tt.wantJudgedBy)
				}
				switch {
				case ch.Verdict == Slower && r.Backend == plantedSlowBackend:
					slower++
				case ch.Verdict == Faster || ch.Verdict == Slower:
					t.Errorf("%s %s: %s %.3f (%.3f–%.3f), planted nothing", r.CaseID, r.Name, ch.Verdict, ch.Ratio, ch.Low, ch.High)
				}
			}
			if want := map[bool]int{true: 4, false: 0}[tt.wantSlower]; slower != want {
				t.Errorf("%d cpu-reference rows slower, want %d", slower, want)
			}
		})
	}
}

// TestGPURowsKeepTheThreshold: a CPU threshold leaves the rows timed on
// a GPU to the threshold.
func TestGPURowsKeepTheThreshold(t *testing.T) {
	sources := load(t, oldRun, newRun)
	c, err := Compare(sources, Options{Threshold: DefaultThreshold, CPUThreshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	gpu := 0
	for _, r := range c.Rows {
		want := DefaultThreshold
		if r.OnCPU() {
			want = 0.9
		} else {
			gpu++
		}
		if got := r.Changes[0].Threshold; got != want {
			t.Errorf("%s %s: judged by %v, want %v", r.CaseID, r.Name, got, want)
		}
	}
	if gpu == 0 {
		t.Fatal("the fixture has no GPU rows")
	}
}
