package stats

import (
	"math"
	"testing"
	"time"

	"github.com/flashcore/bench/sdk"
)

func us(values ...float64) []time.Duration {
	out := make([]time.Duration, len(values))
	for i, v := range values {
		out[i] = time.Duration(v * float64(time.Microsecond))
	}
	return out
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    Summary
	}{
		{"empty", nil, Summary{RelNoise: math.Inf(1)}},
		{"one", us(5), Summary{N: 1, Median: 5000, Mean: 5000, Min: 5000, Max: 5000, P10: 5000, P90: 5000, RelNoise: math.Inf(1)}},
		{
			// Sorted 1..10 µs: h(0.1) = 0.9 → 1.9 µs, h(0.9) = 8.1 → 9.1 µs;
			// stdev of 1..10 is sqrt(55/6) µs.
			"ten, unsorted", us(10, 1, 9, 2, 8, 3, 7, 4, 6, 5),
			Summary{N: 10, Median: 5500, Mean: 5500, Stdev: time.Duration(math.Round(math.Sqrt(55.0/6) * 1000)),
				Min: 1000, Max: 10000, P10: 1900, P90: 9100, RelNoise: sdk.RelativeNoise(us(1, 2, 3, 4, 5, 6, 7, 8, 9, 10))},
		},
		{
			"odd count, outlier", us(2, 2, 2, 2, 100),
			Summary{N: 5, Median: 2000, Mean: 21600, Stdev: time.Duration(math.Round(math.Sqrt(4*19.6*19.6+78.4*78.4) / 2 * 1000)),
				Min: 2000, Max: 100000, P10: 2000, P90: 60800, RelNoise: math.Inf(1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.samples); got != tc.want {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRates(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"1e12 flops in 1 s", TFLOPS(1e12, time.Second), 1},
		{"seed shape in 7.4 µs", TFLOPS(536870912, 7400*time.Nanosecond), 72.55012324324324},
		{"zero time", TFLOPS(1e12, 0), 0},
		{"2 GB in 1 ms", GBps(2e6, time.Millisecond), 2},
		{"negative time", GBps(1, -time.Second), 0},
	}
	for _, tc := range tests {
		if math.Abs(tc.got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestGeoMean(t *testing.T) {
	tests := []struct {
		values []float64
		want   float64
	}{
		{[]float64{2, 8}, 4},
		{[]float64{1, 10, 100}, 10},
		{[]float64{3}, 3},
		{[]float64{0.5, 2}, 1},
	}
	for _, tc := range tests {
		if got := GeoMean(tc.values); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("GeoMean(%v) = %v, want %v", tc.values, got, tc.want)
		}
	}
	for _, bad := range [][]float64{nil, {1, 0}, {2, -1}, {math.NaN()}} {
		if got := GeoMean(bad); !math.IsNaN(got) {
			t.Errorf("GeoMean(%v) = %v, want NaN", bad, got)
		}
	}
}
