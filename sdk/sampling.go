package sdk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// DefaultMeasurement is the contract's default when a suite sets nothing.
func DefaultMeasurement() Measurement {
	return Measurement{
		WarmupRuns:  10,
		WarmupTime:  50 * time.Millisecond,
		MinSamples:  20,
		MaxSamples:  2000,
		TargetNoise: 0.005,
		TimeCap:     2 * time.Second,
		L2:          L2Hot,
		CallSamples: 20,
		Placements:  DefaultPlacements,
	}
}

// DefaultPlacements is how many placements a Run's kernel samples span
// when the suite sets none: enough blocks for compare to bound a ratio
// from block medians alone (four a side is the least that can).
const DefaultPlacements = 5

// Sample takes one timed sample. It returns the time the sample measured.
type Sample func(ctx context.Context) (time.Duration, error)

// CollectSamples applies the measurement contract's warm-up and stopping
// rule to sample (docs/measurement.md):
//
//  1. run sample untimed until both WarmupRuns and WarmupTime are reached;
//  2. take timed samples until at least MinSamples are taken and then stop
//     as soon as RelativeNoise < TargetNoise, or MaxSamples are taken, or
//     TimeCap has passed since the first timed sample.
//
// The noise is re-evaluated every few samples, not after each one, so the
// check costs nothing measurable.
//
// Under a Run's context (MarkPhase) it marks the warm-up as PhaseWarmup
// and the samples as PhaseSample with why they stopped (StopNoise, StopMax
// or StopTimeCap): "sample:noise".
func CollectSamples(ctx context.Context, m Measurement, sample Sample) ([]time.Duration, error) {
	if err := warmUp(ctx, m, sample); err != nil {
		return nil, err
	}
	MarkPhase(ctx, PhaseWarmup)
	samples, stop, err := takeSamples(ctx, m, sample)
	MarkPhase(ctx, strings.TrimSuffix(PhaseSample+":"+stop, ":"))
	return samples, err
}

// takeSamples is step 2 of CollectSamples: the timed samples, and why
// they stopped.
func takeSamples(ctx context.Context, m Measurement, sample Sample) ([]time.Duration, string, error) {
	minSamples, maxSamples := SampleBounds(m)
	samples := make([]time.Duration, 0, minSamples)
	start := time.Now()
	for len(samples) < maxSamples {
		if err := ctx.Err(); err != nil {
			return samples, "", err
		}
		d, err := sample(ctx)
		if err != nil {
			return samples, "", fmt.Errorf("sample %d: %w", len(samples), err)
		}
		samples = append(samples, d)
		if len(samples) < minSamples {
			continue
		}
		if m.TimeCap > 0 && time.Since(start) >= m.TimeCap {
			return samples, StopTimeCap, nil
		}
		if NoiseStops(samples, m.TargetNoise) {
			return samples, StopNoise, nil
		}
	}
	return samples, StopMax, nil
}

// ErrStayPut is what a Move returns, wrapped, when the buffers cannot move
// (the device has no room for a second copy): sampling goes on in the
// placement the buffers have, and its samples count to the block before.
var ErrStayPut = errors.New("the buffers stay where they are")

// Move puts the buffers of the case being timed in a fresh place in device
// memory, e.g. by allocating new ones (behind a spacer allocation, so that
// they cannot land where the old ones were), copying the data and freeing
// the old ones. placement counts from 1; 0 is Prepare's.
type Move func(ctx context.Context, placement int) error

// CollectPlacedSamples takes the kernel samples of one Run in
// m.Placements blocks, moving the case's buffers between two blocks, so
// that the samples show how the kernel's time depends on where its buffers
// lie (docs/measurement.md). Each block runs CollectSamples under its
// share of m (BlockMeasurement): the blocks' sample bounds add up to m's.
// blocks counts the samples of each block; nil with one placement.
func CollectPlacedSamples(ctx context.Context, m Measurement, sample Sample, move Move) (samples []time.Duration, blocks []int, err error) {
	n := Placements(m)
	if n <= 1 || move == nil {
		samples, err = CollectSamples(ctx, m, sample)
		return samples, nil, err
	}
	for i := range n {
		if i > 0 {
			err := move(ctx, i)
			MarkPhase(ctx, PhaseMove)
			switch {
			case errors.Is(err, ErrStayPut):
				more, err := CollectSamples(ctx, BlockMeasurement(m, i), sample)
				samples = append(samples, more...)
				blocks[len(blocks)-1] += len(more)
				if err != nil {
					return samples, blocks, err
				}
				continue
			case err != nil:
				return samples, blocks, fmt.Errorf("move the buffers to placement %d: %w", i+1, err)
			}
		}
		block, err := CollectSamples(ctx, BlockMeasurement(m, i), sample)
		samples = append(samples, block...)
		blocks = append(blocks, len(block))
		if err != nil {
			return samples, blocks, err
		}
	}
	return samples, blocks, nil
}

// Placements is how many blocks m's samples are taken in: m.Placements,
// at least 1 and at most min_samples (every block takes a sample).
func Placements(m Measurement) int {
	return max(min(m.Placements, max(m.MinSamples, 1)), 1)
}

// BlockMeasurement is block i's share of m (counting from 0) when its
// samples are taken in Placements(m) blocks: min_samples and max_samples
// split as evenly as whole samples allow (the first blocks take the
// remainder), so that the blocks together take at least m.MinSamples and at
// most m.MaxSamples; the time cap split evenly; the full warm-up for the
// first block, and for the others, after a move, its share of the runs (at
// least one) and no time: a move changes where the buffers lie (their
// pages, their lines in L2), which the first runs on them settle, not the
// device's clocks, which the first block's warm-up time is for and which
// the samples since have kept up.
func BlockMeasurement(m Measurement, i int) Measurement {
	n := Placements(m)
	if n <= 1 {
		return m
	}
	share := func(total int) int {
		s := total / n
		if i < total%n {
			s++
		}
		return s
	}
	b := m
	b.Placements = 1
	b.MinSamples = max(share(max(m.MinSamples, 1)), 1)
	if m.MaxSamples > 0 {
		b.MaxSamples = max(share(m.MaxSamples), b.MinSamples)
	}
	b.TimeCap = m.TimeCap / time.Duration(n)
	if i > 0 {
		resumed := ResumedWarmUp(m)
		b.WarmupRuns, b.WarmupTime = resumed.WarmupRuns, resumed.WarmupTime
	}
	return b
}

// ResumedWarmUp is m with the warm-up of sampling that resumes on a
// device its own samples have just kept busy: after a move between two
// placement blocks, and in a row's Run after its first (the next L2 mode,
// which the host asks for right after the one before, on the same
// buffers). It is the Placements share of runs (at least one) and no
// warm-up time: the first runs settle what changed (where the buffers
// lie, the L2's contents), while the device's clocks, which warmup_time
// brings up, are still up from the samples just taken.
func ResumedWarmUp(m Measurement) Measurement {
	n := Placements(m)
	m.WarmupRuns = max((m.WarmupRuns+n-1)/n, 1)
	m.WarmupTime = 0
	return m
}

// checkEvery is how many samples pass between two noise evaluations.
const checkEvery = 5

// FirstNoiseCheck is the fewest samples the noise is evaluated at: the
// first count RelativeNoise gives an interval for (at six samples, their
// extremes, which hold the median with 97% confidence). The rule
// evaluates it there and then at every multiple of checkEvery, so a
// steady block of a few microsecond samples stops at six, not ten.
const FirstNoiseCheck = 6

// SampleBounds are the fewest and the most timed samples the stopping
// rule takes under m: min_samples (at least 1), and max_samples (at least
// min_samples).
func SampleBounds(m Measurement) (lo, hi int) {
	lo = max(m.MinSamples, 1)
	return lo, max(m.MaxSamples, lo)
}

// NoiseStops reports whether the stopping rule, once min_samples are
// taken, stops at samples by the noise target: their count is one the
// rule evaluates the noise at (FirstNoiseCheck, or a multiple of its
// interval) and their RelativeNoise is below target. The host replays the
// rule with it (core/runner).
func NoiseStops(samples []time.Duration, target float64) bool {
	n := len(samples)
	return (n == FirstNoiseCheck || n%checkEvery == 0) && RelativeNoise(samples) < target
}

func warmUp(ctx context.Context, m Measurement, sample Sample) error {
	start := time.Now()
	for i := 0; i < m.WarmupRuns || time.Since(start) < m.WarmupTime; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := sample(warmUpContext(ctx)); err != nil {
			return fmt.Errorf("warm-up run %d: %w", i, err)
		}
	}
	return nil
}

type warmUpKey struct{}

func warmUpContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, warmUpKey{}, true)
}

// WarmingUp reports whether a Sample was called with ctx for a warm-up
// run, whose time CollectSamples throws away: a backend that keeps
// something per sample (a reference time, say) keeps nothing for it.
func WarmingUp(ctx context.Context) bool {
	w, _ := ctx.Value(warmUpKey{}).(bool)
	return w
}

// RelativeNoise is the half-width of the distribution-free 95% confidence
// interval of the median, divided by the median. The interval's ends are the
// order statistics at ranks n/2 ± 0.98·√n (the normal approximation to the
// binomial), so the figure assumes only independent samples, not a normal
// distribution, and it shrinks as samples are added. It is +Inf for fewer
// than 6 samples, which is too few for an interval.
func RelativeNoise(samples []time.Duration) float64 {
	n := len(samples)
	if n < FirstNoiseCheck {
		return math.Inf(1)
	}
	sorted := make([]float64, n)
	for i, s := range samples {
		sorted[i] = float64(s)
	}
	sort.Float64s(sorted)
	half := 0.98 * math.Sqrt(float64(n))
	lo := max(int(math.Floor(float64(n)/2-half)), 0)
	hi := min(int(math.Ceil(float64(n)/2+half)), n-1)
	median := MedianSorted(sorted)
	if median <= 0 {
		return math.Inf(1)
	}
	return (sorted[hi] - sorted[lo]) / 2 / median
}

// MedianDuration is the median of samples; 0 for none.
func MedianDuration(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := make([]float64, len(samples))
	for i, d := range samples {
		sorted[i] = float64(d)
	}
	sort.Float64s(sorted)
	return time.Duration(MedianSorted(sorted))
}

// MedianSorted is the median of an ascending slice.
func MedianSorted(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// WallClockCallSamples are a wall-clock backend's n call samples: on a
// CPU a call sample and a kernel sample are the same measure, the wall
// time of one whole call (docs/measurement.md), so the last n kernel
// samples are the call samples, and sample takes more only when there
// are fewer than n. Taking n more calls would repeat the measure and buy
// nothing.
func WallClockCallSamples(ctx context.Context, kernel []time.Duration, n int, sample Sample) ([]time.Duration, error) {
	calls := slices.Clone(kernel[max(len(kernel)-n, 0):])
	for len(calls) < n {
		d, err := sample(ctx)
		if err != nil {
			return nil, fmt.Errorf("call sample %d: %w", len(calls), err)
		}
		calls = append(calls, d)
	}
	return calls, nil
}
