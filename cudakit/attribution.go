package cudakit

import (
	"fmt"
	"math"

	"github.com/flashcore/bench/cudakit/gpu"
)

// helperMark is the top bit of the marks of the measurement's own kernels
// (the spin and the L2 flush), which no figure counts: each sample's carry
// helperMark with the sample's number.
const helperMark = 1 << 63

// sampleMarks are the CUPTI marks of one kernel-time sample
// (device_timing_cuda.go): helper on its spin and flush (helpers launches),
// first to first+calls-1 on its calls, each of which runs perCall
// activities.
type sampleMarks struct {
	helper  uint64
	helpers int
	first   uint64
	calls   uint64
	perCall int
}

// attribution is what the records say of one sample.
type attribution struct {
	marks sampleMarks
	// perCall are each call's activities, by its mark.
	perCall [][]gpu.Activity
	// helpersSeen counts the records of the sample's spin and flush.
	helpersSeen int
	// windowNs sums every activity that started on the device no earlier
	// than the sample's spin, less any measurement helper's: the figure.
	// byMarkNs sums the activities of the calls' marks: the reference.
	windowNs, byMarkNs uint64
}

// attribute reads the records drained since the sample began (and any
// earlier ones still arriving). Only device timestamps are compared: the
// window opens at the start of the sample's spin, which runs before its
// calls in stream order; what ran before it (earlier samples, untimed
// calls) started earlier.
func (m sampleMarks) attribute(acts []gpu.Activity) attribution {
	a := attribution{marks: m, perCall: make([][]gpu.Activity, m.calls)}
	spinStart := uint64(math.MaxUint64)
	for _, act := range acts {
		switch {
		case act.Marked && act.Mark == m.helper:
			a.helpersSeen++
			spinStart = min(spinStart, act.StartNs)
		case act.Marked && act.Mark >= m.first && act.Mark < m.first+m.calls:
			a.perCall[act.Mark-m.first] = append(a.perCall[act.Mark-m.first], act)
			a.byMarkNs += act.DurationNs()
		}
	}
	if a.helpersSeen == 0 {
		return a
	}
	for _, act := range acts {
		if act.StartNs >= spinStart && !(act.Marked && act.Mark&helperMark != 0) {
			a.windowNs += act.DurationNs()
		}
	}
	return a
}

// short counts the calls with fewer activities than a call runs.
func (a attribution) short() int {
	n := 0
	for _, c := range a.perCall {
		if len(c) < a.marks.perCall {
			n++
		}
	}
	return n
}

// complete reports whether every call and helper launch of the sample has
// its records.
func (a attribution) complete() bool {
	return a.short() == 0 && a.helpersSeen >= a.marks.helpers
}

// missing says what the records still lack.
func (a attribution) missing() string {
	return fmt.Sprintf("CUPTI recorded fewer than the %d kernel(s) and memset(s) of a call for %d of the sample's %d call(s), "+
		"and %d of its %d spin and flush launches", a.marks.perCall, a.short(), a.marks.calls, a.helpersSeen, a.marks.helpers)
}
