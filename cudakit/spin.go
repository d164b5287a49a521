package cudakit

import "time"

// The spin kernel must hold the stream until the host has queued the rest
// of a sample (L2 flush, start event, kernel, stop event). A Go launch takes
// about 3 µs, so 100 µs covers the queueing many times over; cold samples
// queue one more kernel and get twice as long. When the host still outlasts
// the spin (a loaded machine, a preempted thread) the sample is retaken with
// a spin twice as long, up to maxSpin.
const (
	hotSpin  = 100 * time.Microsecond
	coldSpin = 200 * time.Microsecond
	maxSpin  = 5 * time.Millisecond
	// spinMargin: a sample counts as covered when the host finished
	// queueing within this fraction of the spin.
	spinMarginNum, spinMarginDen = 3, 4
)

// Hot-mode samples time a batch of back-to-back launches lasting about
// hotBatchTarget, at most hotBatchMax launches (docs/measurement.md).
const (
	hotBatchTarget = 100 * time.Microsecond
	hotBatchMax    = 32
)

// hotBatch is the number of launches one hot sample times, given the time
// of a single launch.
func hotBatch(single time.Duration) int {
	if single <= 0 {
		return hotBatchMax
	}
	n := int((hotBatchTarget + single - 1) / single)
	return max(1, min(hotBatchMax, n))
}

// spinLengths are the current spin lengths per L2 mode. They only grow.
type spinLengths struct{ hot, cold time.Duration }

func defaultSpinLengths() spinLengths { return spinLengths{hot: hotSpin, cold: coldSpin} }

// of returns the spin length of a mode, for reading and growing.
func (s *spinLengths) of(cold bool) *time.Duration {
	if cold {
		return &s.cold
	}
	return &s.hot
}

// spinCovered reports whether a spin of length spin covered host queueing
// that took queued: only then is no host gap inside the timed interval.
func spinCovered(spin, queued time.Duration) bool {
	return queued*spinMarginDen < spin*spinMarginNum
}

// longerSpin is the spin to retry with after spin was too short, and false
// when spin is already the longest allowed.
func longerSpin(spin time.Duration) (time.Duration, bool) {
	if spin >= maxSpin {
		return spin, false
	}
	return min(2*spin, maxSpin), true
}
