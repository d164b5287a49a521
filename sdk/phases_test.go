package sdk

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPhasesRoundTrip(t *testing.T) {
	phases := []Phase{{PhaseWarmup, 51 * time.Millisecond}, {PhaseSample + ":" + StopNoise, 212 * time.Millisecond}, {PhaseCalls, 7}}
	text := EncodePhases(phases)
	if text != "warmup=51000000 sample:noise=212000000 calls=7" {
		t.Errorf("EncodePhases = %q", text)
	}
	got, err := DecodePhases(text)
	if err != nil || !reflect.DeepEqual(got, phases) {
		t.Errorf("DecodePhases(%q) = %v, %v", text, got, err)
	}
}

func TestDecodePhasesRefusesWhatDoesNotRead(t *testing.T) {
	for _, text := range []string{"warmup", "=5", "warmup=-1", "warmup=1.5", "warmup=x"} {
		if _, err := DecodePhases(text); err == nil {
			t.Errorf("DecodePhases(%q) took it", text)
		}
	}
}

// CollectSamples marks its warm-up and its samples, with why they stopped,
// and a placed collection marks its moves.
func TestCollectMarksItsPhases(t *testing.T) {
	clock := NewPhaseClock()
	ctx := WithPhaseClock(context.Background(), clock)
	steady := func(context.Context) (time.Duration, error) { return time.Microsecond, nil }
	m := Measurement{WarmupRuns: 2, MinSamples: 12, MaxSamples: 40, TargetNoise: 0.01, Placements: 2}
	move := func(context.Context, int) error { return nil }
	if _, _, err := CollectPlacedSamples(ctx, m, steady, move); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range clock.Phases() {
		names = append(names, p.Name)
	}
	want := "warmup sample:noise move warmup sample:noise"
	if got := strings.Join(names, " "); !strings.HasPrefix(got, want) {
		t.Errorf("phases %q, want %q first", got, want)
	}
}

func TestStopReasons(t *testing.T) {
	steady := func(context.Context) (time.Duration, error) { return time.Microsecond, nil }
	alternating := func() Sample {
		i := 0
		return func(context.Context) (time.Duration, error) {
			i++
			return time.Duration(7000 + 2000*(i%2)), nil
		}
	}
	slow := func(context.Context) (time.Duration, error) {
		time.Sleep(2 * time.Millisecond)
		return time.Millisecond, nil
	}
	for _, tt := range []struct {
		name   string
		m      Measurement
		sample Sample
		want   string
	}{
		{"noise", Measurement{MinSamples: 10, MaxSamples: 40, TargetNoise: 0.01}, steady, StopNoise},
		{"max", Measurement{MinSamples: 10, MaxSamples: 40, TargetNoise: 0.01}, alternating(), StopMax},
		{"time cap", Measurement{MinSamples: 3, MaxSamples: 1000, TargetNoise: 1e-9, TimeCap: 10 * time.Millisecond}, slow, StopTimeCap},
	} {
		_, stop, err := takeSamples(context.Background(), tt.m, tt.sample)
		if err != nil || stop != tt.want {
			t.Errorf("%s: stopped by %q, %v; want %q", tt.name, stop, err, tt.want)
		}
	}
}

// MarkPhase outside a Run's context does nothing.
func TestMarkPhaseWithoutClock(t *testing.T) {
	MarkPhase(context.Background(), PhaseCalls)
}
