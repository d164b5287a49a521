//go:build cuda

package cudakit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// deviceTiming times kernel samples by what ran on the device, from
// CUPTI's activity records (gpu.ActivityTrace), as the Python bridges do:
// a sample's figure is the summed device time of every kernel and memset
// its calls ran, divided by its calls. The events around the calls are
// still taken; they also count the device's gaps between calls and, for a
// single call, the event pair's own latency (about 2.4 µs on an H100), and
// are the row's cross-check (docs/measurement.md).
//
// Two attributions are made of one sample's records:
//
//   - the figure: every activity that started on the device after the
//     sample's spin did, less the spin and the L2 flush (launched under the
//     sample's own helper mark): device timestamps only, since CUPTI's
//     conversion of them to the host's clock can be microseconds off;
//   - the reference (flashcore verify-timing, sdk.TimingReferenceEnv): the
//     activities of the calls' own marks, each call launched under its own
//     CUPTI external correlation id.
//
// They differ when something ran in the window that no call launched, or a
// call's work ran outside it.
type deviceTiming struct {
	trace     *gpu.ActivityTrace
	reference bool
	// perCall is how many activities one call runs: its memsets and
	// kernels (deviceCase.activitiesPerCall).
	perCall int

	next uint64 // the next call's mark

	// The sample being taken.
	samples    uint64 // samples begun, for the helper marks
	helperID   uint64 // the mark of its spin and flush
	helpers    int    // launches under helperID
	first, n   uint64 // its calls' marks
	lastRef    float64
	lastEvents time.Duration
	lastActs   [][]gpu.Activity

	// uncovered says why the events' figure was used in the end
	// (uncoveredDeviceTime); "" when CUPTI's was.
	uncovered string

	// The kept samples'.
	events []time.Duration
	refs   []float64
	calls  [][]gpu.Activity // the first keptCalls calls' activities
}

// keptCalls bounds how many calls' activities are kept to describe a call.
const keptCalls = 64

// startDeviceTiming starts CUPTI's records for a Run; nil and the reason
// when CUPTI cannot be had (the sampler then times by events). The Run
// holds the process's CUPTI records until close.
func startDeviceTiming(reference bool, perCall int) (*deviceTiming, error) {
	deviceTimingMu.Lock()
	trace, err := gpu.StartActivityTrace()
	if err == nil {
		_, err = trace.Drain()
	}
	if err != nil {
		deviceTimingMu.Unlock()
		return nil, err
	}
	return &deviceTiming{trace: trace, reference: reference, perCall: max(perCall, 1)}, nil
}

// deviceTimingMu keeps one Run at a time on CUPTI's records, which are the
// process's: a Drain takes what every thread launched.
var deviceTimingMu sync.Mutex

// close lets the next Run have CUPTI's records.
func (d *deviceTiming) close() {
	if d != nil {
		deviceTimingMu.Unlock()
	}
}

// beginSample is called before the sample's spin.
func (d *deviceTiming) beginSample() {
	if d == nil {
		return
	}
	d.samples++
	d.helperID, d.helpers = helperMark|d.samples, 0
	d.first, d.n = d.next, 0
}

// helper runs launch (the spin or the flush) under the sample's helper
// mark.
func (d *deviceTiming) helper(launch func() error) error {
	if d == nil {
		return launch()
	}
	d.helpers++
	return d.marked(d.helperID, launch)
}

// call runs one call of the sample under its own mark.
func (d *deviceTiming) call(run func() error) error {
	if d == nil {
		return run()
	}
	mark := d.next
	d.next++
	d.n++
	return d.marked(mark, run)
}

// marked runs launch with CUPTI tying what it launches to mark.
func (d *deviceTiming) marked(mark uint64, launch func() error) error {
	if err := d.trace.Mark(mark); err != nil {
		return err
	}
	err := launch()
	return errors.Join(err, d.trace.Unmark())
}

// endSample is called once the sample's stop event has completed, with the
// events' time per call; it returns the sample's device figure per call.
// CUPTI may hand over a kernel's record a little after the kernel has
// finished: the records are drained until every call has all of its
// activities, for at most recordWait.
func (d *deviceTiming) endSample(events time.Duration) (time.Duration, error) {
	marks := sampleMarks{helper: d.helperID, helpers: d.helpers, first: d.first, calls: d.n, perCall: d.perCall}
	var acts []gpu.Activity
	var got attribution
	deadline := time.Now().Add(recordWait)
	for pause := 20 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		more, err := d.trace.Drain()
		if err != nil {
			return 0, err
		}
		acts = append(acts, more...)
		if got = marks.attribute(acts); got.complete() {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s, %v after the sample ended", got.missing(), recordWait)
		}
		time.Sleep(pause)
	}
	if got.windowNs == 0 {
		return 0, fmt.Errorf("CUPTI recorded no kernel or memset after the sample's spin (%d call(s))", d.n)
	}
	calls := float64(max(d.n, 1))
	d.lastRef, d.lastEvents, d.lastActs = float64(got.byMarkNs)/calls, events, got.perCall
	return time.Duration(float64(got.windowNs)/calls + 0.5), nil
}

// recordWait bounds how long endSample waits for CUPTI's records.
const recordWait = 200 * time.Millisecond

// keepSample keeps the latest sample, which the sampling contract kept.
func (d *deviceTiming) keepSample() {
	if d == nil {
		return
	}
	d.events = append(d.events, d.lastEvents)
	d.refs = append(d.refs, d.lastRef)
	for _, c := range d.lastActs {
		if len(d.calls) < keptCalls && len(c) > 0 {
			d.calls = append(d.calls, c)
		}
	}
}

// covered returns the Run's kernel samples and their cross-check: the
// CUPTI figures kept and the same samples' event figures, or, where
// CUPTI's records miss device time the events saw (uncoveredDeviceTime),
// the other way round.
func (d *deviceTiming) covered(kernelTimes []time.Duration) (kernel, crossCheck []time.Duration) {
	if d == nil || len(d.events) != len(kernelTimes) {
		return kernelTimes, nil
	}
	if d.uncovered = uncoveredDeviceTime(d.events, kernelTimes); d.uncovered != "" {
		return slices.Clone(d.events), kernelTimes
	}
	return kernelTimes, slices.Clone(d.events)
}

// facts describe the device timing of the Run's kept samples: one call's
// activities, the cross-check, and, when asked, the reference.
func (d *deviceTiming) facts() map[string]string {
	kernels := describeActivities(d.calls)
	facts := map[string]string{
		FactKernelMethod: fmt.Sprintf("CUPTI activity records (%s): the kernels and memsets that started on the device "+
			"after each sample's spin, less the L2 flush, summed and divided by its calls", filepath.Base(d.trace.Library())),
		FactKernels: kernels,
		FactCrossCheckMethod: "CUDA events around the same samples' calls, behind the spin: " +
			"the event pair's latency and the device's gaps between calls included",
	}
	if d.uncovered != "" {
		facts[FactKernelMethod] = "CUDA events around each sample's calls, behind the spin"
		facts[FactCUPTIFallback] = d.uncovered
		facts[FactCrossCheckMethod] = "CUPTI's records of the same samples, which missed device time the events saw"
	}
	if !d.reference {
		return facts
	}
	if len(d.refs) == 0 {
		facts[sdk.FactReferenceError] = "no sample was kept"
		return facts
	}
	text := make([]string, len(d.refs))
	for i, f := range d.refs {
		text[i] = strconv.FormatInt(int64(f+0.5), 10)
	}
	facts[sdk.FactReferenceMethod] = "CUPTI activity records, by correlation: each sampled call launched under " +
		"its own external correlation id, its kernels and memsets summed; one figure per sample, its calls' mean"
	facts[sdk.FactReferenceNs] = strings.Join(text, " ")
	facts[sdk.FactReferenceKernels] = kernels
	return facts
}

// describeActivities is "name (µs); ..." for the activities of a call, each
// the median over the calls that ran as many activities as the first.
func describeActivities(calls [][]gpu.Activity) string {
	if len(calls) == 0 {
		return ""
	}
	width := len(calls[0])
	parts := make([]string, width)
	for i := range width {
		var ns []float64
		for _, c := range calls {
			if len(c) == width {
				ns = append(ns, float64(c[i].DurationNs()))
			}
		}
		slices.Sort(ns)
		parts[i] = fmt.Sprintf("%s (%.2f µs)", calls[0][i].Name, sdk.MedianSorted(ns)/1000)
	}
	return strings.Join(parts, "; ")
}
