package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/sdk"
)

// runCPUReference runs cpu-reference on the tiny suite with budget.
func runCPUReference(t *testing.T, budget Budget) *results.Run {
	t.Helper()
	plugins := []host.Plugin{{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")}}
	s, err := suite.Parse("tiny.toml", []byte(tinySuite))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), Config{Suite: s, Plugins: plugins, Budget: budget})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return run
}

// Every row's steps add up to its wall time, in the order they run, and
// its Run carries the plugin's split of it; the plugin's start and each
// case's inputs are recorded once, outside the rows, and the plugins' stop
// once, at the run's end.
func TestRowTimeBreakdown(t *testing.T) {
	run := runCPUReference(t, Budget{})
	if run.Backends[0].StartNs <= 0 {
		t.Errorf("backend start_ns = %d, want > 0", run.Backends[0].StartNs)
	}
	// The plugins' stop is inside the run's wall time, as their start is.
	if wall := run.FinishedAt.Sub(run.StartedAt).Nanoseconds(); run.PluginStopNs <= 0 || run.PluginStopNs >= wall {
		t.Errorf("plugin_stop_ns = %d, want > 0 and inside the run's %d ns", run.PluginStopNs, wall)
	}
	for _, c := range run.Cases {
		if c.InputsNs <= 0 {
			t.Errorf("case %s: inputs_ns = %d, want > 0", c.ID, c.InputsNs)
		}
	}
	for _, r := range run.Results {
		var sum int64
		var names []string
		for _, p := range r.Time {
			sum += p.Ns
			names = append(names, p.Name)
		}
		if sum != r.Duration.Nanoseconds() {
			t.Errorf("%s: steps add up to %d ns, the row took %d", r.CaseID, sum, r.Duration.Nanoseconds())
		}
		want := []string{results.PhaseInputs, results.PhaseWalls, results.PhasePrepare, results.PhaseCheckedRun, results.PhaseCheck,
			results.PhaseRun, results.PhaseTimedCheck, results.PhaseRecheck, results.PhaseRelease, results.PhaseOther}
		if got := firstSeen(names); !slices.Equal(got, want) {
			t.Errorf("%s: steps %v, want them in the order %v", r.CaseID, names, want)
		}
		i := slices.IndexFunc(r.Time, func(p results.Phase) bool { return p.Name == results.PhaseRun })
		if i < 0 || r.Time[i].L2 != sdk.L2Hot || len(r.Time[i].Plugin) == 0 || r.Time[i].Plugin[0].Name != sdk.PhaseWarmup {
			t.Errorf("%s: run step %+v, want L2 hot and the plugin's phases from warm-up", r.CaseID, r.Time)
		}
		// The recheck carries the host's split of it: on a CPU, every part,
		// in order, adding up to no more than the step.
		j := slices.IndexFunc(r.Time, func(p results.Phase) bool { return p.Name == results.PhaseRecheck })
		var partNames []string
		var partSum int64
		for _, q := range r.Time[j].Host {
			partNames = append(partNames, q.Name)
			partSum += q.Ns
		}
		wantParts := []string{results.RecheckInputs, results.RecheckRelease, results.RecheckPrepare, results.RecheckBatch,
			results.RecheckMarginal, results.RecheckCheck}
		if !slices.Equal(partNames, wantParts) {
			t.Errorf("%s: the recheck's parts %v, want %v", r.CaseID, partNames, wantParts)
		}
		if partSum <= 0 || partSum > r.Time[j].Ns {
			t.Errorf("%s: the recheck's parts add up to %d ns, the step took %d", r.CaseID, partSum, r.Time[j].Ns)
		}
		for _, timing := range r.Timings {
			if _, ok := timing.Facts[sdk.PhasesFact]; ok {
				t.Errorf("%s: the phases report stayed in the timing's facts", r.CaseID)
			}
		}
	}
}

// A budget smaller than the suite's time cap lowers it: the sampling of a
// slow-to-settle row stops at the budget, the row says so, and it still
// has min_samples.
func TestBudgetStopsSamplingOpenly(t *testing.T) {
	run := runCPUReference(t, Budget{Row: time.Millisecond})
	for _, r := range run.Results {
		if r.Status != results.StatusPass {
			t.Fatalf("%s: %s %s", r.CaseID, r.Status, r.Reason)
		}
		if r.Budget == nil || r.Budget.Ns != time.Millisecond.Nanoseconds() {
			t.Fatalf("%s: budget %+v, want 1ms", r.CaseID, r.Budget)
		}
		if !slices.Equal(r.Budget.Hit, []sdk.L2Mode{sdk.L2Hot}) {
			t.Errorf("%s: budget hit %v, want [hot]; phases %+v", r.CaseID, r.Budget.Hit, r.Time)
		}
		if n := r.Timings[0].Kernel.N; n < 6 {
			t.Errorf("%s: %d samples, want min_samples (6) whatever the budget", r.CaseID, n)
		}
	}
}

func TestStoppedByTimeCap(t *testing.T) {
	for _, tt := range []struct {
		phases string
		want   bool
	}{
		{"warmup=1 sample:noise=2", false},
		{"warmup=1 sample:noise=2 move=1 warmup=1 sample:time_cap=4", true},
		{"warmup=1 sample:max=2 calls=3", false},
		{"", false},
	} {
		s := sdk.Samples{Facts: map[string]string{sdk.PhasesFact: tt.phases}}
		if got := stoppedByTimeCap(takePhases(&s)); got != tt.want {
			t.Errorf("%q: stopped by the time cap %v, want %v", tt.phases, got, tt.want)
		}
		if s.Facts != nil {
			t.Errorf("%q: facts %v left after taking the phases", tt.phases, s.Facts)
		}
	}
	if s := (sdk.Samples{Facts: map[string]string{sdk.PhasesFact: "warmup=x"}}); takePhases(&s) != nil {
		t.Error("a report that does not read was taken")
	}
}

// firstSeen is names without repeats, in the order of first appearance
// (the checked run and its check repeat with [check] repeat).
func firstSeen(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
