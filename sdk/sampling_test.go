package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBlockMeasurementSharesTheBounds(t *testing.T) {
	tests := []struct {
		name                 string
		placements, min, max int
		wantBlocks           int
	}{
		{"default", 5, 20, 2000, 5},
		{"uneven", 5, 7, 7, 5},
		{"one", 1, 20, 2000, 1},
		{"unset", 0, 20, 2000, 1},
		{"more placements than samples", 8, 3, 10, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := DefaultMeasurement()
			m.Placements, m.MinSamples, m.MaxSamples = tt.placements, tt.min, tt.max
			n := Placements(m)
			if n != tt.wantBlocks {
				t.Fatalf("Placements = %d, want %d", n, tt.wantBlocks)
			}
			var sumMin, sumMax int
			for i := range n {
				b := BlockMeasurement(m, i)
				if b.MinSamples < 1 || b.MaxSamples < b.MinSamples {
					t.Errorf("block %d: min %d max %d", i, b.MinSamples, b.MaxSamples)
				}
				if i > 0 && n > 1 && b.WarmupRuns < 1 {
					t.Errorf("block %d: no warm-up run after a move", i)
				}
				if wantTime := map[bool]time.Duration{true: m.WarmupTime, false: 0}[i == 0]; b.WarmupTime != wantTime {
					t.Errorf("block %d: warm-up time %v, want %v (the full warm-up first, runs only after a move)", i, b.WarmupTime, wantTime)
				}
				sumMin += b.MinSamples
				sumMax += b.MaxSamples
			}
			if sumMin < tt.min || sumMax > tt.max {
				t.Errorf("blocks take %d..%d samples, the measurement asks for %d..%d", sumMin, sumMax, tt.min, tt.max)
			}
		})
	}
}

func TestCollectPlacedSamplesMovesBetweenBlocks(t *testing.T) {
	m := Measurement{WarmupRuns: 1, MinSamples: 12, MaxSamples: 12, TimeCap: time.Minute, Placements: 4}
	placement := 0
	var moves []int
	sample := func(context.Context) (time.Duration, error) { return time.Duration(1000 + placement), nil }
	move := func(_ context.Context, p int) error {
		moves = append(moves, p)
		if p == 2 {
			return fmt.Errorf("no room: %w", ErrStayPut)
		}
		placement = p
		return nil
	}
	samples, blocks, err := CollectPlacedSamples(context.Background(), m, sample, move)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moves, []int{1, 2, 3}) {
		t.Errorf("moves %v, want [1 2 3]", moves)
	}
	if !slices.Equal(blocks, []int{3, 6, 3}) || len(samples) != 12 {
		t.Errorf("blocks %v of %d samples, want [3 6 3] of 12 (the stay-put block counts to the one before)", blocks, len(samples))
	}
	if samples[0] != 1000 || samples[11] != 1003 {
		t.Errorf("samples %v: want the first from placement 0 and the last from placement 3", samples)
	}
	move = func(context.Context, int) error { return errors.New("device lost") }
	if _, _, err := CollectPlacedSamples(context.Background(), m, sample, move); err == nil || !strings.Contains(err.Error(), "placement 2") {
		t.Errorf("a failed move: err %v, want one naming placement 2", err)
	}
}

// TestWarmingUpMarksTheDiscardedRuns: a sample told it is a warm-up's is
// exactly one whose time CollectPlacedSamples throws away.
func TestWarmingUpMarksTheDiscardedRuns(t *testing.T) {
	m := Measurement{WarmupRuns: 3, MinSamples: 10, MaxSamples: 10, TimeCap: time.Minute, Placements: 2}
	n := 0
	var warm, kept []time.Duration
	sample := func(ctx context.Context) (time.Duration, error) {
		n++
		d := time.Duration(n)
		if WarmingUp(ctx) {
			warm = append(warm, d)
		} else {
			kept = append(kept, d)
		}
		return d, nil
	}
	got, _, err := CollectPlacedSamples(context.Background(), m, sample, func(context.Context, int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, kept) {
		t.Errorf("kept samples %v, but the samples not told of a warm-up were %v", got, kept)
	}
	if len(warm) == 0 || len(warm)+len(kept) != n {
		t.Errorf("%d warm-up runs of %d samples", len(warm), n)
	}
	if WarmingUp(context.Background()) {
		t.Error("a plain context reads as a warm-up's")
	}
}

func TestMedianDuration(t *testing.T) {
	tests := []struct {
		samples []time.Duration
		want    time.Duration
	}{
		{nil, 0},
		{[]time.Duration{7}, 7},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{4, 1, 8, 2}, 3},
	}
	for _, tt := range tests {
		if got := MedianDuration(tt.samples); got != tt.want {
			t.Errorf("MedianDuration(%v) = %v, want %v", tt.samples, got, tt.want)
		}
	}
}

// On a CPU the call samples are the last kernel samples, topped up with
// calls of their own only when there are too few (the Python twin's test
// is test_wall_clock_call_samples_are_the_last_kernel_samples).
func TestWallClockCallSamples(t *testing.T) {
	more := []time.Duration{99, 98}
	sample := func(context.Context) (time.Duration, error) {
		d := more[0]
		more = more[1:]
		return d, nil
	}
	for _, tt := range []struct {
		kernel []time.Duration
		n      int
		want   []time.Duration
	}{
		{[]time.Duration{1, 2, 3, 4}, 2, []time.Duration{3, 4}},
		{[]time.Duration{1, 2}, 4, []time.Duration{1, 2, 99, 98}},
		{[]time.Duration{1, 2}, 0, []time.Duration{}},
	} {
		got, err := WallClockCallSamples(context.Background(), tt.kernel, tt.n, sample)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("WallClockCallSamples(%v, %d) = %v, %v; want %v", tt.kernel, tt.n, got, err, tt.want)
		}
	}
}
