package ncu

import (
	"fmt"
	"math"
)

// Hint is a bottleneck a profile points at, in the spirit of the seeds'
// hypothesis tables: which metric crossed which threshold, and what the
// usual fix is.
type Hint struct {
	Name      string // "memory-bound", "low tensor-core use", …
	Source    string // what was read, e.g. "DRAM throughput"
	Metric    string // the ncu metric that triggered it
	Observed  string // its value, e.g. "72.3%"
	Condition string // the threshold crossed, e.g. "≥ 50%"
	Advice    string
}

// rule is one hint's trigger: a value read from a profile, compared with
// a threshold.
type rule struct {
	name      string
	source    string // the reading or stall the value comes from, as docs/profiling.md names it
	below     bool   // fires when the value is below the threshold (else at or above it)
	threshold float64
	unit      string // how the threshold and value print: "%" or " µs" or ""
	advice    string
	// value reads the rule's metric from a profile; false when absent.
	value func(p KernelProfile) (metric string, v float64, ok bool)
}

// rules are the hints, in the order they print. Their thresholds are the
// seeds' (docs/profiling.md lists them); a test keeps that page's table
// the same as this one.
var rules = []rule{
	{name: "memory-bound", source: "DRAM throughput", threshold: 50, unit: "%",
		advice: "overlap loads with compute (cp.async double buffering) and reuse tiles from shared memory",
		value:  reading(readDRAM)},
	{name: "low tensor-core use", source: "Tensor pipe active", below: true, threshold: 30, unit: "%",
		advice: "put Q·Kᵀ and P·V on the tensor cores (WMMA, mma.sync, wgmma) with fragments reused across the tile",
		value:  reading(readTensor)},
	{name: "barrier stalls", source: "barrier share of stall cycles", threshold: 10, unit: "%",
		advice: "fewer __syncthreads() per tile: warp-level sync, or warp specialisation",
		value:  stallShare("barrier")},
	{name: "MIO stalls", source: "mio throttle share of stall cycles", threshold: 10, unit: "%",
		advice: "shared-memory instruction queue is full: wider (vectorised) shared loads, fewer of them, no bank conflicts",
		value:  stallShare("mio_throttle")},
	{name: "occupancy-limited", source: "Achieved occupancy", below: true, threshold: 50, unit: "%",
		advice: "fewer registers or less shared memory per block (see the limiter), or smaller tiles",
		value:  reading(readAchieved)},
	{name: "launch-bound", source: "Duration", below: true, threshold: 10, unit: " µs",
		advice: "the kernel is as short as a launch (about 3 µs from Go, 20–40 µs of Python dispatch): batch more heads per launch",
		value: func(p KernelProfile) (string, float64, bool) {
			m, v, ok := reading(readDuration)(p)
			return m, v / 1e3, ok
		}},
	{name: "launch-bound", source: "Waves per SM", below: true, threshold: 1, unit: "",
		advice: "fewer blocks than the GPU runs at once: smaller tiles or a split over the keys to fill every SM",
		value:  reading(readWaves)},
}

func reading(r Reading) func(KernelProfile) (string, float64, bool) {
	return func(p KernelProfile) (string, float64, bool) {
		f := p.figure(r)
		return f.Metric, f.Value, f.Metric != "" && !math.IsNaN(f.Value)
	}
}

func stallShare(reason string) func(KernelProfile) (string, float64, bool) {
	return func(p KernelProfile) (string, float64, bool) {
		s, ok := p.stall(reason)
		return s.Metric, 100 * s.Share, ok
	}
}

// hints are the rules p triggers.
func hints(p KernelProfile) []Hint {
	var out []Hint
	for _, r := range rules {
		metric, v, ok := r.value(p)
		if !ok || !r.fires(v) {
			continue
		}
		h := Hint{Name: r.name, Source: r.source, Metric: metric, Observed: r.format(v), Condition: r.condition(), Advice: r.advice}
		if r.name == "occupancy-limited" && p.Limiter != nil {
			h.Advice = fmt.Sprintf("limited by %s (%s = %g blocks/SM): %s",
				p.Limiter.Cause, p.Limiter.Metric, p.Limiter.Blocks, r.advice)
		}
		out = append(out, h)
	}
	return out
}

func (r rule) fires(v float64) bool {
	if r.below {
		return v < r.threshold
	}
	return v >= r.threshold
}

func (r rule) condition() string {
	op := "≥"
	if r.below {
		op = "<"
	}
	return fmt.Sprintf("%s %g%s", op, r.threshold, r.unit)
}

func (r rule) format(v float64) string {
	if r.unit == "%" {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.3g%s", v, r.unit)
}
