package ncu

import (
	"strconv"
	"strings"
)

// Measure says what ncu collects for each profiled kernel.
type Measure []string

// TimingMeasure is the kernel's duration alone, under the settings that
// match flashcore's own timing (docs/measurement.md): the clocks left
// alone (ncu's default locks them to base, which reads about 1.5× longer
// at small shapes) and the caches flushed before each kernel only in cold
// mode.
func TimingMeasure(l2 string) Measure {
	cache := "none"
	if l2 == "cold" {
		cache = "all"
	}
	return Measure{"--clock-control", "none", "--cache-control", cache, "--metrics", TimeMetric}
}

// ProfileMeasure collects the sections the profile table reads (see
// profile.go), with ncu's default clock and cache control: locked clocks
// make counters comparable from run to run.
func ProfileMeasure() Measure {
	m := Measure{}
	for _, s := range profileSections {
		m = append(m, "--section", s)
	}
	return append(m, "--metrics", strings.Join(profileExtraMetrics, ","))
}

// profileSections are ncu's stock sections that hold the profile's metrics.
var profileSections = []string{
	"SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "WarpStateStats",
}

// Limit bounds which of the selected launches are profiled: Skip of them
// first, then at most Count (0: all).
type Limit struct {
	Skip, Count int
}

// Profiling is the ncu command prefix that profiles the process put after
// it, by reach r, writing the report to report (".ncu-rep" is added by
// ncu) and ncu's own messages to log, never to the process's stdout (a
// go-plugin plugin's stdout carries its handshake).
func (t Tool) Profiling(r Reach, m Measure, limit Limit, report, log string) []string {
	args := []string{t.Path, "--target-processes", "application-only"}
	args = append(args, m...)
	args = append(args, r.selection()...)
	if limit.Skip > 0 {
		args = append(args, "--launch-skip", strconv.Itoa(limit.Skip))
	}
	if limit.Count > 0 {
		args = append(args, "--launch-count", strconv.Itoa(limit.Count))
	}
	return append(args, "--export", report, "--force-overwrite", "--log-file", log)
}

// ImportArgs print a report's raw page (every metric, one row per kernel)
// as CSV. Units stay ncu's choice (usecond, Kbyte/block…): asking for base
// units rounds values to two decimals. units.go converts them.
func ImportArgs(report string, rename bool) []string {
	args := []string{"--import", report, "--csv", "--page", "raw"}
	if rename {
		args = append(args, "--print-nvtx-rename", "kernel")
	}
	return args
}
