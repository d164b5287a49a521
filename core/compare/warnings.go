package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// headerWarnings lists what makes the runs hard to compare, so that no
// ratio between an H100 run and an L4 run, or between different inputs,
// is read without saying so.
func headerWarnings(c *Comparison) []string {
	var warnings []string
	if listing, differ := perRun(c.Runs, DevicesOf); differ {
		warnings = append(warnings, "runs were measured on different devices ("+listing+"); ratios compare the hardware as well as the code")
	}
	if listing, differ := perRun(c.Runs, driverOf); differ {
		warnings = append(warnings, "runs were measured under different drivers ("+listing+")")
	}
	warnings = append(warnings, clockWarnings(c)...)
	warnings = append(warnings, methodWarnings(c)...)
	warnings = append(warnings, sampleWarnings(c.Runs)...)
	warnings = append(warnings, suiteWarnings(c.Runs)...)
	warnings = append(warnings, modeWarnings(c)...)
	warnings = append(warnings, inputWarnings(c)...)
	return append(warnings, statusWarnings(c.Runs)...)
}

// perRun lists value(run) for every run as "label: value; ..." and says
// whether the values differ.
func perRun(runs []RunInfo, value func(*results.Run) string) (string, bool) {
	var parts, seen []string
	for _, r := range runs {
		v := value(r.Run)
		parts = append(parts, r.Label+": "+v)
		if !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	}
	return strings.Join(parts, "; "), len(seen) > 1
}

// DevicesOf names the GPUs of a run, or its CPU when it had none.
func DevicesOf(run *results.Run) string {
	var names []string
	for _, d := range run.Environment.GPUs {
		names = append(names, d.Name)
	}
	switch {
	case len(names) > 0:
		return strings.Join(names, ", ")
	case run.Environment.CPU != "":
		return "no GPU, CPU " + run.Environment.CPU
	}
	return "no GPU"
}

func suiteWarnings(runs []RunInfo) []string {
	var warnings []string
	if listing, differ := perRun(runs, func(r *results.Run) string { return r.Suite.Name }); differ {
		warnings = append(warnings, "runs followed different suites ("+listing+"); cases of one suite only show as added or removed")
	} else if listing, differ := perRun(runs, func(r *results.Run) string { return shortHash(r.Suite.SHA256) }); differ {
		warnings = append(warnings, "the suite file changed between runs (SHA-256 "+listing+")")
	}
	for _, f := range measurementFields {
		listing, differ := perRun(runs, func(r *results.Run) string { return f.value(r.Suite) })
		if differ {
			warnings = append(warnings, fmt.Sprintf("measurement setting %s differs (%s); the rows were not timed alike", f.key, listing))
		}
	}
	return warnings
}

// cpuTimeCap is the time cap a suite set apart for the rows on a CPU, or
// "time_cap" where it set none (time_cap's own line tells that apart).
func cpuTimeCap(s results.Suite) string {
	if s.CPUTimeCap > 0 {
		return s.CPUTimeCap.String()
	}
	return "time_cap"
}

// cpuMinSamples is min_samples a suite set apart for the rows on a CPU,
// or "min_samples" where it set none.
func cpuMinSamples(s results.Suite) string {
	if s.CPUMinSamples > 0 {
		return fmt.Sprint(s.CPUMinSamples)
	}
	return "min_samples"
}

// measurementFields are the settings of the measurement contract, by
// their suite keys, whose difference the header names.
var measurementFields = []struct {
	key   string
	value func(results.Suite) string
}{
	{"warmup_runs", func(s results.Suite) string { return fmt.Sprint(s.Measurement.WarmupRuns) }},
	{"warmup_time", func(s results.Suite) string { return s.Measurement.WarmupTime.String() }},
	{"min_samples", func(s results.Suite) string { return fmt.Sprint(s.Measurement.MinSamples) }},
	{"max_samples", func(s results.Suite) string { return fmt.Sprint(s.Measurement.MaxSamples) }},
	{"target_noise", func(s results.Suite) string { return fmt.Sprint(s.Measurement.TargetNoise) }},
	{"time_cap", func(s results.Suite) string { return s.Measurement.TimeCap.String() }},
	{"cpu_time_cap", cpuTimeCap},
	{"cpu_min_samples", cpuMinSamples},
	{"call_samples", func(s results.Suite) string { return fmt.Sprint(s.Measurement.CallSamples) }},
	{"placements", func(s results.Suite) string { return fmt.Sprint(sdk.Placements(s.Measurement)) }},
}

// modeWarnings names the runs whose primary L2 mode is not the compared
// one.
func modeWarnings(c *Comparison) []string {
	var warnings []string
	for _, r := range c.Runs[1:] {
		if m := r.Run.PrimaryMode(); m != c.Mode {
			warnings = append(warnings, fmt.Sprintf("%s measured L2 %s first; every run is compared in L2 %s, the first run's primary mode", r.Label, m, c.Mode))
		}
	}
	return warnings
}

// inputWarnings names every case whose inputs hash differently between
// runs: its rows were measured on different data. A run that records no
// hash for the case (it did not reach it) is left out: its rows show as
// added or removed instead.
func inputWarnings(c *Comparison) []string {
	var warnings []string
	for _, id := range caseIDs(c.Rows) {
		hashed := slices.DeleteFunc(slices.Clone(c.Runs), func(r RunInfo) bool { return inputOf(r.Run, id) == "" })
		listing, differ := perRun(hashed, func(run *results.Run) string { return shortHash(inputOf(run, id)) })
		if differ {
			warnings = append(warnings, fmt.Sprintf("inputs differ for case %s (SHA-256 %s); its rows were measured on different data", id, listing))
		}
	}
	return warnings
}

func caseIDs(rows []Row) []string {
	var ids []string
	for _, r := range rows {
		if len(ids) == 0 || ids[len(ids)-1] != r.CaseID {
			ids = append(ids, r.CaseID)
		}
	}
	return ids
}

// inputOf is the input hash a run records for a case: from its case list,
// else from its first row of the case that has one; "" when none.
func inputOf(run *results.Run, caseID string) string {
	for _, c := range run.Cases {
		if c.ID == caseID && c.InputSHA256 != "" {
			return c.InputSHA256
		}
	}
	for _, r := range run.Results {
		if r.CaseID == caseID && r.InputSHA256 != "" {
			return r.InputSHA256
		}
	}
	return ""
}

// statusWarnings names the runs that did not finish.
func statusWarnings(runs []RunInfo) []string {
	var warnings []string
	for _, r := range runs {
		if r.Run.Status != results.RunComplete {
			warnings = append(warnings, fmt.Sprintf("%s did not finish (status %s); rows it did not reach show as added or removed",
				r.Label, statusOrUnknown(r.Run.Status)))
		}
	}
	return warnings
}

func statusOrUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
