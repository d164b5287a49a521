// Package stats turns timed samples into the figures of a result row: a
// summary of the samples, and throughput from the work a case's op says
// one call does (ops.Op.Work).
//
// Where to start: [Summarize] for samples; [TFLOPS] and [GBps] for
// throughput; [GeoMean] to sum up ratios across
// cases; [CompareRatio] to tell whether two sets of samples differ, and
// by what factor.
package stats

import (
	"math"
	"slices"
	"time"

	"github.com/flashcore/bench/sdk"
)

// Summary describes a set of timed samples.
type Summary struct {
	N                   int
	Median, Mean, Stdev time.Duration
	Min, Max, P10, P90  time.Duration
	// RelNoise is sdk.RelativeNoise of the samples: the half-width of the
	// distribution-free 95% confidence interval of the median, over the
	// median. +Inf for fewer than 6 samples.
	RelNoise float64
}

// Summarize describes samples. Percentiles interpolate linearly between
// the two nearest order statistics (the "type 7" definition, numpy's
// default): the p-quantile of n sorted samples x₀..xₙ₋₁ is at rank
// h = (n−1)·p, between x⌊h⌋ and x⌈h⌉. The median is the 0.5-quantile. Stdev
// is the sample standard deviation (n−1 in the denominator), 0 for one
// sample. An empty set gives a zero Summary with RelNoise +Inf.
func Summarize(samples []time.Duration) Summary {
	s := Summary{N: len(samples), RelNoise: sdk.RelativeNoise(samples)}
	if s.N == 0 {
		return s
	}
	sorted := make([]float64, s.N)
	for i, d := range samples {
		sorted[i] = float64(d)
	}
	slices.Sort(sorted)
	mean, stdev := meanStdev(sorted)
	s.Mean, s.Stdev = round(mean), round(stdev)
	s.Min, s.Max = round(sorted[0]), round(sorted[s.N-1])
	s.Median = round(quantile(sorted, 0.5))
	s.P10, s.P90 = round(quantile(sorted, 0.1)), round(quantile(sorted, 0.9))
	return s
}

// quantile is the p-quantile of ascending values by linear interpolation.
func quantile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := int(math.Floor(h))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (h-float64(lo))*(sorted[hi]-sorted[lo])
}

func meanStdev(values []float64) (mean, stdev float64) {
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	if len(values) < 2 {
		return mean, 0
	}
	var sumSq float64
	for _, v := range values {
		sumSq += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sumSq / float64(len(values)-1))
}

func round(ns float64) time.Duration { return time.Duration(math.Round(ns)) }

// TFLOPS is flops done in d, in 10¹² per second; 0 for a non-positive d.
func TFLOPS(flops float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return flops / d.Seconds() / 1e12
}

// GBps is bytes moved in d, in 10⁹ per second; 0 for a non-positive d.
func GBps(bytes float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return bytes / d.Seconds() / 1e9
}

// GeoMean is the geometric mean of positive values, the mean that suits
// ratios such as speed-ups. It is NaN for an empty slice or when a value is
// not positive.
func GeoMean(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	var sumLog float64
	for _, v := range values {
		if !(v > 0) {
			return math.NaN()
		}
		sumLog += math.Log(v)
	}
	return math.Exp(sumLog / float64(len(values)))
}
