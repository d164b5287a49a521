package sdk

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Run's phases: where the time of one Run call went inside the plugin,
// as the plugin's own clock saw it. The host times every call itself and
// keeps that as the truth; this report only splits a Run's time into its
// parts (docs/measurement.md, "Where the time goes").
//
// The report travels in Samples.Facts under PhasesFact, so the protocol
// needs no field of its own; the host takes it out of the facts and files
// it with the row's time breakdown. Serve adds it to every Run's answer
// from the marks CollectSamples, CollectPlacedSamples and MarkPhase make;
// the Python bridges write the same text from their twin.

// PhasesFact is the key of the phases report in Samples.Facts.
const PhasesFact = "phases"

// The phases of a Run, as reported. A sampling block's phase is PhaseSample
// with why it stopped: "sample:noise", "sample:max", "sample:time_cap".
const (
	PhaseWarmup     = "warmup"      // untimed runs before a block's samples
	PhaseSample     = "sample"      // a block's timed kernel samples
	PhaseMove       = "move"        // moving the buffers to the next placement
	PhaseCalls      = "calls"       // the host-inclusive call samples
	PhaseCrossCheck = "cross_check" // the independent kernel figure's own calls
	PhaseOutput     = "output"      // writing the last timed call's output
	PhaseOther      = "other"       // the rest of the Run, unmarked
)

// Why a block's sampling stopped (CollectSamples).
const (
	StopNoise   = "noise"    // the relative noise fell below the target
	StopMax     = "max"      // max_samples were taken
	StopTimeCap = "time_cap" // time_cap passed after the first sample
)

// Phase is one part of a Run and how long it took.
type Phase struct {
	Name     string
	Duration time.Duration
}

// PhaseClock splits a Run's time into phases: each Mark closes the phase
// that began at the previous mark (or at the clock's start).
type PhaseClock struct {
	mu     sync.Mutex
	last   time.Time
	phases []Phase
}

// NewPhaseClock starts a clock now.
func NewPhaseClock() *PhaseClock { return &PhaseClock{last: time.Now()} }

// Mark closes the phase that ran since the last mark under name.
func (p *PhaseClock) Mark(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.phases = append(p.phases, Phase{Name: name, Duration: now.Sub(p.last)})
	p.last = now
}

// Phases are the marked phases and, when it is not nothing, the time
// since the last mark as PhaseOther.
func (p *PhaseClock) Phases() []Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	phases := append([]Phase(nil), p.phases...)
	if rest := time.Since(p.last); rest > 0 {
		phases = append(phases, Phase{Name: PhaseOther, Duration: rest})
	}
	return phases
}

type phaseClockKey struct{}

// WithPhaseClock is ctx carrying p: CollectSamples, CollectPlacedSamples
// and MarkPhase under it mark p.
func WithPhaseClock(ctx context.Context, p *PhaseClock) context.Context {
	return context.WithValue(ctx, phaseClockKey{}, p)
}

// MarkPhase closes the phase of the Run that ran since the last mark
// under name (PhaseCalls, say), where ctx is a Run's: Serve gives every
// Run a clock. Elsewhere it does nothing.
func MarkPhase(ctx context.Context, name string) {
	p, _ := ctx.Value(phaseClockKey{}).(*PhaseClock)
	p.Mark(name)
}

// EncodePhases writes phases as PhasesFact's value: "name=ns" pairs in
// order, separated by spaces ("warmup=51000000 sample:noise=212000000").
func EncodePhases(phases []Phase) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = p.Name + "=" + strconv.FormatInt(p.Duration.Nanoseconds(), 10)
	}
	return strings.Join(parts, " ")
}

// DecodePhases reads PhasesFact's value. A plugin wrote it, so a
// malformed one is an error for the host to note, not to trust.
func DecodePhases(s string) ([]Phase, error) {
	var phases []Phase
	for _, field := range strings.Fields(s) {
		name, ns, ok := strings.Cut(field, "=")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("phases: %q is not name=nanoseconds", field)
		}
		phases = append(phases, Phase{Name: name, Duration: time.Duration(n)})
	}
	return phases, nil
}
