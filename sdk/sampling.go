package sdk

import (
	"context"
	"fmt"
	"math"
	"sort"
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
	}
}

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
func CollectSamples(ctx context.Context, m Measurement, sample Sample) ([]time.Duration, error) {
	if err := warmUp(ctx, m, sample); err != nil {
		return nil, err
	}
	minSamples := max(m.MinSamples, 1)
	maxSamples := max(m.MaxSamples, minSamples)
	samples := make([]time.Duration, 0, minSamples)
	start := time.Now()
	for len(samples) < maxSamples {
		if err := ctx.Err(); err != nil {
			return samples, err
		}
		d, err := sample(ctx)
		if err != nil {
			return samples, fmt.Errorf("sample %d: %w", len(samples), err)
		}
		samples = append(samples, d)
		if len(samples) < minSamples {
			continue
		}
		if m.TimeCap > 0 && time.Since(start) >= m.TimeCap {
			break
		}
		if len(samples)%checkEvery == 0 && RelativeNoise(samples) < m.TargetNoise {
			break
		}
	}
	return samples, nil
}

// checkEvery is how many samples pass between two noise evaluations.
const checkEvery = 5

func warmUp(ctx context.Context, m Measurement, sample Sample) error {
	start := time.Now()
	for i := 0; i < m.WarmupRuns || time.Since(start) < m.WarmupTime; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := sample(ctx); err != nil {
			return fmt.Errorf("warm-up run %d: %w", i, err)
		}
	}
	return nil
}

// RelativeNoise is the half-width of the distribution-free 95% confidence
// interval of the median, divided by the median. The interval's ends are the
// order statistics at ranks n/2 ± 0.98·√n (the normal approximation to the
// binomial), so the figure assumes only independent samples, not a normal
// distribution, and it shrinks as samples are added. It is +Inf for fewer
// than 6 samples, which is too few for an interval.
func RelativeNoise(samples []time.Duration) float64 {
	n := len(samples)
	if n < 6 {
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
