package runner

import (
	"maps"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// rowClock splits a row's wall time into its steps (results.Phase) by the
// host's monotonic clock: each mark closes the step that ran since the
// mark before, so the steps add up to the row's time whatever returns
// early. The host's figures are the truth; a plugin's report of its own
// steps only splits a call's figure (pluginPhases).
type rowClock struct {
	start, last time.Time
	phases      []results.Phase
}

func newRowClock(start time.Time) *rowClock { return &rowClock{start: start, last: start} }

// mark closes the step that ran since the last mark as name (in L2 mode
// l2, for a step taken once per mode).
func (c *rowClock) mark(name string, l2 sdk.L2Mode) *results.Phase {
	if c == nil {
		return nil
	}
	now := time.Now()
	c.phases = append(c.phases, results.Phase{Name: name, L2: l2, Ns: now.Sub(c.last).Nanoseconds()})
	c.last = now
	return &c.phases[len(c.phases)-1]
}

// markRun closes a Run call's step and files the plugin's report of it.
func (c *rowClock) markRun(name string, l2 sdk.L2Mode, plugin []results.PluginPhase) {
	if p := c.mark(name, l2); p != nil {
		p.Plugin = plugin
	}
}

// partClock splits one step of a row into parts (results.Phase.Host),
// each closed by a mark, by the host's clock.
type partClock struct {
	last  time.Time
	parts []results.PluginPhase
}

func newPartClock() *partClock { return &partClock{last: time.Now()} }

// mark closes the part that ran since the last mark as name.
func (c *partClock) mark(name string) {
	now := time.Now()
	c.parts = append(c.parts, results.PluginPhase{Name: name, Ns: now.Sub(c.last).Nanoseconds()})
	c.last = now
}

// finish closes the row at end: what ran since the last mark is
// PhaseOther.
func (c *rowClock) finish(end time.Time) []results.Phase {
	if c == nil {
		return nil
	}
	c.phases = append(c.phases, results.Phase{Name: results.PhaseOther, Ns: max(end.Sub(c.last), 0).Nanoseconds()})
	return c.phases
}

// takePhases takes the plugin's report of a Run's steps (sdk.PhasesFact)
// out of its facts, so that the timing's facts read as before, and
// returns it; nil when the plugin sent none or sent one that does not
// read (a plugin's report is only ever a split of the host's figure).
func takePhases(s *sdk.Samples) []results.PluginPhase {
	text, ok := s.Facts[sdk.PhasesFact]
	if !ok {
		return nil
	}
	s.Facts = maps.Clone(s.Facts)
	delete(s.Facts, sdk.PhasesFact)
	if len(s.Facts) == 0 {
		s.Facts = nil
	}
	phases, err := sdk.DecodePhases(text)
	if err != nil {
		return nil
	}
	out := make([]results.PluginPhase, len(phases))
	for i, p := range phases {
		out[i] = results.PluginPhase{Name: p.Name, Ns: p.Duration.Nanoseconds()}
	}
	return out
}
