package ncu

import (
	"fmt"
	"math"
	"slices"

	"github.com/flashcore/bench/sdk"
)

// The bound of verify-timing: our kernel figure agrees with ncu's when
// |ours − ncu| ≤ max(RelBound × ncu, AbsBoundNs). The absolute floor is
// for tiny kernels, where ncu itself adds about 1 µs
// (docs/measurement.md) and 2% is a few tens of nanoseconds.
const (
	RelBound   = 0.02
	AbsBoundNs = 500
)

// Verdict is a verify-timing row's outcome.
type Verdict string

const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
	// Skip: nothing to check (a CPU row, a skipped or failed row).
	Skip Verdict = "SKIP"
	// Error: the row should have been checked but a figure is missing.
	Error Verdict = "ERROR"
)

// TimingRow is one row of verify-timing: our figure against ncu's.
type TimingRow struct {
	Backend string
	Row     RowKey
	// OursNs is flashcore's median kernel time from the unprofiled run.
	OursNs float64
	// NcuNs is the median over the calls ncu profiled of each call's
	// summed kernel durations; Calls is how many calls that was, and
	// KernelsPerCall how many kernels the first of them launched.
	NcuNs          float64
	Calls          int
	KernelsPerCall int
	Verdict        Verdict
	Reason         string
}

// Ratio is ours over ncu's; NaN when either is missing.
func (r TimingRow) Ratio() float64 {
	if r.OursNs <= 0 || r.NcuNs <= 0 {
		return math.NaN()
	}
	return r.OursNs / r.NcuNs
}

// Agree reports whether ours is within the bound of ncu's figure.
func Agree(oursNs, ncuNs float64) bool {
	return math.Abs(oursNs-ncuNs) <= max(RelBound*ncuNs, AbsBoundNs)
}

// CompareCalls judges our figure for a row against the calls ncu profiled
// for it.
func CompareCalls(backend string, row RowKey, oursNs float64, calls []Call) TimingRow {
	t := TimingRow{Backend: backend, Row: row, OursNs: oursNs}
	durations := make([]float64, 0, len(calls))
	for _, c := range calls {
		d, ok := c.DurationNs()
		if !ok {
			return t.errored(fmt.Sprintf("ncu recorded no %s for call %d", TimeMetric, c.N))
		}
		durations = append(durations, d)
	}
	if len(durations) == 0 {
		return t.errored("ncu profiled no call of this row")
	}
	slices.Sort(durations)
	t.NcuNs, t.Calls, t.KernelsPerCall = sdk.MedianSorted(durations), len(calls), len(calls[0].Kernels)
	t.Verdict = Fail
	if Agree(oursNs, t.NcuNs) {
		t.Verdict = Pass
	}
	return t
}

func (t TimingRow) errored(reason string) TimingRow {
	t.Verdict, t.Reason = Error, reason
	return t
}
