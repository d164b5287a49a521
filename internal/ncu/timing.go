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

// The references verify-timing measures a row against.
const (
	// ReferenceNcu is Nsight Compute's gpu__time_duration.sum, summed over
	// a call's kernels (memsets and copies are not kernels: ncu does not
	// see them).
	ReferenceNcu = "ncu"
	// ReferenceCupti is CUPTI's device time of each call, every activity
	// the call launched, told apart from other calls by correlation
	// (the bridges' worker, flashcore_cupti.reference_call_times).
	ReferenceCupti = "cupti"
)

// TimingRow is one row of verify-timing: our figure against a reference's.
type TimingRow struct {
	Backend string
	Row     RowKey
	// OursNs is flashcore's median kernel time from the unprofiled run.
	OursNs float64
	// Reference names the tool that gave RefNs: ReferenceNcu or
	// ReferenceCupti.
	Reference string
	// RefNs is the median over the calls the reference timed of each
	// call's summed device durations; Calls is how many calls that was,
	// and KernelsPerCall how many kernels (activities, for CUPTI) the
	// first of them launched.
	RefNs          float64
	Calls          int
	KernelsPerCall int
	Verdict        Verdict
	Reason         string
}

// Ratio is ours over the reference's; NaN when either is missing.
func (r TimingRow) Ratio() float64 {
	if r.OursNs <= 0 || r.RefNs <= 0 {
		return math.NaN()
	}
	return r.OursNs / r.RefNs
}

// Agree reports whether ours is within the bound of ncu's figure.
func Agree(oursNs, ncuNs float64) bool {
	return math.Abs(oursNs-ncuNs) <= max(RelBound*ncuNs, AbsBoundNs)
}

// CompareCalls judges our figure for a row against the calls ncu profiled
// for it.
func CompareCalls(backend string, row RowKey, oursNs float64, calls []Call) TimingRow {
	t := TimingRow{Backend: backend, Row: row, OursNs: oursNs, Reference: ReferenceNcu}
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
	kernels := len(calls[0].Kernels)
	return CompareReference(backend, row, oursNs, ReferenceNcu, durations, kernels)
}

// CompareReference judges our figure for a row against a reference's
// per-call device times (ns); kernelsPerCall is how many activities one
// call launched, for the table.
func CompareReference(backend string, row RowKey, oursNs float64, reference string, callsNs []float64, kernelsPerCall int) TimingRow {
	t := TimingRow{Backend: backend, Row: row, OursNs: oursNs, Reference: reference}
	if len(callsNs) == 0 {
		return t.errored(reference + " timed no call of this row")
	}
	sorted := slices.Clone(callsNs)
	slices.Sort(sorted)
	t.RefNs, t.Calls, t.KernelsPerCall = sdk.MedianSorted(sorted), len(sorted), kernelsPerCall
	t.Verdict = Fail
	if Agree(oursNs, t.RefNs) {
		t.Verdict = Pass
	}
	return t
}

// Errored is a row that should have been checked against reference but
// has no figure, with the reason.
func Errored(backend string, row RowKey, oursNs float64, reference, reason string) TimingRow {
	t := TimingRow{Backend: backend, Row: row, OursNs: oursNs, Reference: reference}
	return t.errored(reason)
}

func (t TimingRow) errored(reason string) TimingRow {
	t.Verdict, t.Reason = Error, reason
	return t
}
