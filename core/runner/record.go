package runner

import (
	"bufio"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

func newRun(cfg Config) *results.Run {
	s := cfg.Suite
	tolerances := map[string]results.Tolerance{}
	for dtype, t := range s.Tolerances {
		tolerances[string(dtype)] = results.Tolerance{Atol: t.Atol, Rtol: t.Rtol, RelL2: t.RelL2}
	}
	return &results.Run{
		SchemaVersion: results.SchemaVersion,
		Tool:          cfg.Tool,
		StartedAt:     time.Now().UTC(),
		Status:        "running",
		Command:       cfg.Command,
		Environment:   environment(),
		Suite: results.Suite{
			Name:          s.Name,
			Path:          s.Path,
			SHA256:        s.SHA256,
			Seed:          s.Seed,
			Baseline:      s.Baseline,
			Measurement:   s.Measurement,
			CPUTimeCap:    s.CPUTimeCap,
			CPUMinSamples: s.CPUMinSamples,
			L2Modes:       s.L2Modes,
			Tolerances:    tolerances,
			Check:         results.Check{FullCheckMaxPairs: s.Check.FullCheckMaxPairs, SampledRows: s.Check.SampledRows},
		},
		// Empty, not null, in a run interrupted before its first row: the
		// schema promises lists.
		Backends: []results.Backend{},
		Cases:    []results.Case{},
		Results:  []results.Result{},
	}
}

func environment() results.Environment {
	hostname, _ := os.Hostname()
	return results.Environment{
		Host:      hostname,
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// caseRecord describes a case; its input hash is filled in once the inputs
// exist (a case every row skips never generates them).
func caseRecord(c op.Case) results.Case {
	work := ops.Of(c).Work(c, nil)
	shape, _ := ops.ShapeOf(c)
	return results.Case{
		ID:           c.ID,
		Op:           c.Op,
		Params:       c.Params.Clone(),
		Shape:        shape,
		Distribution: string(c.Distribution),
		FLOPs:        work.FLOPs,
		Bytes:        work.Bytes,
	}
}

func checkRecord(r check.Report, tol op.Tolerance) *results.CheckResult {
	return &results.CheckResult{
		MaxAbsErr:   r.MaxAbsErr,
		RelL2Err:    r.RelL2Err,
		NaN:         r.NaN,
		Inf:         r.Inf,
		Unwritten:   r.Unwritten,
		Violations:  r.Violations,
		RowsChecked: r.RowsChecked,
		RowsTotal:   r.RowsTotal,
		Sampled:     r.Sampled,
		RowSeed:     r.RowSeed,
		OutOfRange:  r.OutOfRange,
		EveryRow:    everyRowRecord(r.EveryRow),
		Tolerance:   results.Tolerance{Atol: tol.Atol, Rtol: tol.Rtol, RelL2: tol.RelL2},
	}
}

func timingRecord(mode sdk.L2Mode, s sdk.Samples) results.Timing {
	t := results.Timing{
		L2:         mode,
		Method:     s.Method,
		Kernel:     statsRecord(s.KernelTimes),
		SMClockMHz: s.SMClockMHz,
		Before:     s.Before,
		After:      s.After,
		Facts:      s.Facts,
	}
	t.Throttled, t.ThrottleNote = throttled(s)
	if len(s.CallTimes) > 0 {
		t.Call = statsRecord(s.CallTimes)
	}
	if len(s.CrossCheckTimes) > 0 {
		cross := statsRecord(s.CrossCheckTimes)
		t.CrossCheck = &cross
	}
	t.Samples = &results.Samples{
		KernelNs:     nanoseconds(s.KernelTimes),
		CallNs:       nanoseconds(s.CallTimes),
		CrossCheckNs: nanoseconds(s.CrossCheckTimes),
		KernelBlocks: slices.Clone(s.KernelBlocks),
	}
	t.Kernel.RelNoise = placedNoise(t.Kernel.RelNoise, t.Samples)
	return t
}

// nanoseconds are the raw samples as the results file keeps them; nil for
// none, so that an absent kind of sample is left out of the file.
func nanoseconds(samples []time.Duration) []int64 {
	if len(samples) == 0 {
		return nil
	}
	ns := make([]int64, len(samples))
	for i, d := range samples {
		ns[i] = d.Nanoseconds()
	}
	return ns
}

func statsRecord(samples []time.Duration) results.Stats {
	s := stats.Summarize(samples)
	return results.Stats{
		N:        s.N,
		MedianNs: float64(s.Median),
		MeanNs:   float64(s.Mean),
		StdevNs:  float64(s.Stdev),
		MinNs:    float64(s.Min),
		MaxNs:    float64(s.Max),
		P10Ns:    float64(s.P10),
		P90Ns:    float64(s.P90),
		RelNoise: s.RelNoise,
	}
}

// placedNoise is the kernel's relative noise when its samples span
// placements: the larger of the samples' own (rel) and the placements'
// medians' spread, since samples of one placement share it and so narrow
// the interval of the median more than they should
// (docs/measurement.md#placements). With six placements or more the
// spread is sdk.RelativeNoise of their medians; with two to five, half
// their range over the median of the medians: the range of five medians
// holds the median placement's time with 94% confidence (1 − 2·2⁻⁵).
func placedNoise(rel float64, samples *results.Samples) float64 {
	medians := samples.PlacementMedians()
	if medians == nil || math.IsInf(rel, 1) {
		return rel
	}
	durations := make([]time.Duration, len(medians))
	for i, m := range medians {
		durations[i] = time.Duration(m)
	}
	spread := sdk.RelativeNoise(durations)
	if len(medians) < 6 {
		m := stats.Summarize(durations)
		spread = float64(m.Max-m.Min) / 2 / float64(m.Median)
	}
	if math.IsNaN(rel) || spread > rel {
		return spread
	}
	return rel
}

// derive computes the figures that follow from the primary timing alone.
func derive(work op.Work, kernel results.Stats, device sdk.Device) results.Derived {
	median := time.Duration(kernel.MedianNs)
	d := results.Derived{
		TFLOPS: stats.TFLOPS(work.FLOPs, median),
		GBps:   stats.GBps(work.Bytes, median),
	}
	if device.PeakTFLOPS > 0 {
		d.PctPeakTFLOPS = 100 * d.TFLOPS / device.PeakTFLOPS
	}
	if device.PeakGBps > 0 {
		d.PctPeakGBps = 100 * d.GBps / device.PeakGBps
	}
	return d
}

// CPUModel is this machine's CPU model name, as results record it; "" when
// the system does not say.
func CPUModel() string { return cpuModel() }
