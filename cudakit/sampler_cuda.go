//go:build cuda

package cudakit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// sampler takes the samples of one Run on the CUDA thread.
//
// Kernel time, per sample (docs/measurement.md):
//
//	cold:   [spin] [L2 flush] (start) [attention] (stop)
//	hot:    [spin] (start) [attention] × batch (stop), divided by batch
//	host:   queue all of it, synchronise on stop, read stop − start
//
// The hot batch spreads the event pair's own latency (about 2 µs on an
// H100) over back-to-back launches that see the same warm L2; it is sized
// from single-launch probes so a batch lasts about hotBatchTarget.
//
// Call time, per sample: host clock around one launch and a context
// synchronisation, with nothing holding the stream (after an untimed flush
// and synchronisation when cold).
type sampler struct {
	b    *Backend
	c    *deviceCase
	cold bool
	// batch is how many back-to-back launches one kernel-time sample
	// times; always 1 when cold.
	batch int

	// spacer is the allocation in front of the current placement's
	// buffers (move); nil before the first move.
	spacer *gpu.Buffer

	retries   int // samples retaken with a longer spin
	uncovered int // samples whose spin was still too short at maxSpin

	// device times the samples by CUPTI (device_timing_cuda.go); nil when
	// they are timed by events, and then noDevice says why.
	device   *deviceTiming
	noDevice string
}

func (s *sampler) collect(ctx context.Context, m sdk.Measurement) (sdk.Samples, error) {
	if s.b.cuptiHeld != "" {
		s.noDevice = s.b.cuptiHeld
	} else if d, err := startDeviceTiming(s.b.referenced, s.c.activitiesPerCall()); err != nil {
		s.noDevice = err.Error()
	} else {
		s.device = d
		defer d.close()
	}
	if err := s.prime(); err != nil {
		return sdk.Samples{}, err
	}
	s.b.timer.ResetClocks()
	kernelTimes, blocks, err := sdk.CollectPlacedSamples(ctx, m, s.kernelSample, s.move)
	if freeErr := s.spacer.Free(); err == nil {
		err = freeErr
	}
	if err != nil {
		return sdk.Samples{}, err
	}
	kernelTimes, crossCheck := s.device.covered(kernelTimes)
	clocks, err := s.b.timer.Clocks(len(kernelTimes))
	if err != nil {
		return sdk.Samples{}, err
	}
	callTimes, err := s.callSamples(ctx, m.CallSamples)
	if err != nil {
		return sdk.Samples{}, err
	}
	sdk.MarkPhase(ctx, sdk.PhaseCalls)
	before, after := endClocks(clocks)
	method := MethodCUDAEventsSpin
	if s.device != nil && s.device.uncovered == "" {
		method = MethodCUPTISpin
	}
	return sdk.Samples{
		KernelTimes:     kernelTimes,
		CallTimes:       callTimes,
		CrossCheckTimes: crossCheck,
		Method:          method,
		SMClockMHz:      medianClock(clocks),
		Before:          before,
		After:           after,
		Diagnostics:     s.diagnostics(),
		Facts:           s.facts(),
		KernelBlocks:    blocks,
	}, nil
}

// move puts the case's buffers in fresh device memory for the next block
// of samples (sdk.Move): a spacer of a size that differs from one
// placement to the next is allocated first and the new buffers after it,
// while the old ones still hold their place, so the new ones cannot take
// it; the data is copied over, the old buffers and the previous spacer are
// freed. Where the device has no room for the copy, the buffers stay put
// (sdk.ErrStayPut). The output keeps its contents, so that a timed launch
// that writes nothing still leaves poison in it.
func (s *sampler) move(ctx context.Context, placement int) error {
	spacer, err := gpu.Alloc(spacerBytes(placement))
	if err != nil {
		if gpu.IsOutOfMemory(err) {
			return fmt.Errorf("%w: %v", sdk.ErrStayPut, err)
		}
		return err
	}
	if err := s.c.moveBuffers(); err != nil {
		spacer.Free()
		if gpu.IsOutOfMemory(err) {
			return fmt.Errorf("%w: %v", sdk.ErrStayPut, err)
		}
		return err
	}
	if err := s.spacer.Free(); err != nil {
		spacer.Free()
		return err
	}
	s.spacer = spacer
	return s.prime()
}

// spacerBytes is the spacer in front of placement p's buffers: from 2 to
// 64 MiB in steps of 2 MiB (the driver's large page), a different size for
// each of the first 32 placements.
func spacerBytes(p int) int64 {
	return int64(1+(p*13)%32) * 2 << 20
}

// prime does, untimed, what the first sample would otherwise do between
// its spin and its events: load the kernel's code (the driver loads modules
// lazily) and, when cold, allocate the flush buffer. Without it the first
// sample outlasts its spin and the spin grows for the whole run.
func (s *sampler) prime() error {
	if s.cold {
		if err := s.b.timer.FlushL2(); err != nil {
			return err
		}
	}
	if err := s.c.run(); err != nil {
		return err
	}
	if err := gpu.Synchronize(); err != nil {
		return err
	}
	s.batch = 1
	if s.cold {
		return nil
	}
	singles := make([]time.Duration, 0, 3)
	for range 3 {
		d, _, err := s.timeOnce(*s.b.spin.of(false))
		if err != nil {
			return err
		}
		singles = append(singles, d)
	}
	slices.Sort(singles)
	s.batch = hotBatch(singles[1])
	return nil
}

func (s *sampler) kernelSample(ctx context.Context) (time.Duration, error) {
	spin := s.b.spin.of(s.cold)
	for {
		d, queued, err := s.timeOnce(*spin)
		if err != nil || spinCovered(*spin, queued) {
			if err == nil && !sdk.WarmingUp(ctx) {
				s.device.keepSample()
			}
			return d, err
		}
		longer, ok := longerSpin(*spin)
		if !ok {
			s.uncovered++
			return d, nil
		}
		s.retries++
		*spin = longer
	}
}

// timeOnce queues one kernel-time sample behind a spin of length spin and
// returns its time per call (by CUPTI, else by the events) and how long
// the host took to queue the sample.
func (s *sampler) timeOnce(spin time.Duration) (elapsed, queued time.Duration, err error) {
	t := s.b.timer
	s.device.beginSample()
	if err := s.device.helper(func() error { return t.Spin(spin) }); err != nil {
		return 0, 0, err
	}
	begin := time.Now()
	if s.cold {
		if err := s.device.helper(t.FlushL2); err != nil {
			return 0, 0, err
		}
	}
	if err := s.b.startEv.Record(); err != nil {
		return 0, 0, err
	}
	calls := max(s.batch, 1)
	for range calls {
		if err := s.device.call(s.c.run); err != nil {
			return 0, 0, err
		}
	}
	if err := s.b.stopEv.Record(); err != nil {
		return 0, 0, err
	}
	queued = time.Since(begin)
	if err := s.b.stopEv.Synchronize(); err != nil {
		return 0, 0, err
	}
	elapsed, err = gpu.Elapsed(s.b.startEv, s.b.stopEv)
	if err != nil {
		return 0, 0, err
	}
	elapsed /= time.Duration(calls)
	if s.device != nil {
		elapsed, err = s.device.endSample(elapsed)
	}
	return elapsed, queued, err
}

func (s *sampler) callSamples(ctx context.Context, n int) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return times, err
		}
		if s.cold {
			if err := s.b.timer.FlushL2(); err != nil {
				return times, err
			}
			if err := gpu.Synchronize(); err != nil {
				return times, err
			}
		}
		begin := time.Now()
		if err := s.c.run(); err != nil {
			return times, err
		}
		if err := gpu.Synchronize(); err != nil {
			return times, err
		}
		times = append(times, time.Since(begin))
	}
	return times, nil
}

func (s *sampler) diagnostics() []sdk.Diagnostic {
	if s.uncovered == 0 {
		return nil
	}
	return []sdk.Diagnostic{{
		Severity: sdk.Warning,
		Summary:  fmt.Sprintf("%d kernel-time samples may include host launch gaps", s.uncovered),
		Detail:   fmt.Sprintf("the host took longer to queue them than the longest spin (%v)", maxSpin),
	}}
}

func (s *sampler) facts() map[string]string {
	var facts map[string]string
	if s.device != nil {
		facts = s.device.facts()
	} else {
		facts = map[string]string{FactCUPTIFallback: s.noDevice}
		if s.b.referenced {
			facts[sdk.FactReferenceError] = "no CUPTI: " + s.noDevice
		}
	}
	maps.Copy(facts, map[string]string{
		FactSpinMicroseconds:  strconv.FormatInt(s.b.spin.of(s.cold).Microseconds(), 10),
		FactSpinRetries:       strconv.Itoa(s.retries),
		FactTimingKernelsHash: s.b.timer.Manifest().SourceSHA256,
		FactCallsPerSample:    strconv.Itoa(max(s.batch, 1)),
	})
	if s.cold {
		facts[FactL2FlushBytes] = strconv.FormatInt(s.b.timer.FlushBytes(), 10)
	}
	return facts
}

// medianClock is the median of the positive clock readings, 0 without any.
func medianClock(clocks []float64) float64 {
	valid := slices.DeleteFunc(slices.Clone(clocks), func(c float64) bool { return !(c > 0) })
	if len(valid) == 0 {
		return 0
	}
	slices.Sort(valid)
	return sdk.MedianSorted(valid)
}

// endClocks are the device states at the start and the end of sampling: the
// median SM clock of the first and of the last few samples' spins (the
// spin reads clock64 over %globaltimer, so it is the clock the kernels ran
// at). nil when the spins read no clock.
func endClocks(clocks []float64) (before, after *sdk.DeviceState) {
	const window = 3
	valid := slices.DeleteFunc(slices.Clone(clocks), func(c float64) bool { return !(c > 0) })
	if len(valid) == 0 {
		return nil, nil
	}
	n := min(window, len(valid))
	return &sdk.DeviceState{SMClockMHz: medianClock(valid[:n])},
		&sdk.DeviceState{SMClockMHz: medianClock(valid[len(valid)-n:])}
}
