package suite

import (
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// Case is the suite's case with the given ID.
func (s *Suite) Case(id string) (op.Case, bool) {
	for _, c := range s.Cases {
		if c.ID == id {
			return c, true
		}
	}
	return op.Case{}, false
}

// Selection is the suite's selection of backend, its tunables kept and
// its variants left empty for the caller to fill; a bare selection when
// the suite does not name the backend.
func (s *Suite) Selection(backend string) BackendSelection {
	for _, b := range s.Backends {
		if b.Name == backend {
			b.Variants = nil
			return b
		}
	}
	return BackendSelection{Name: backend}
}

// OnlyL2 is a copy of s that measures L2 mode l2 alone.
func (s *Suite) OnlyL2(l2 sdk.L2Mode) *Suite {
	only := *s
	only.L2Modes = []sdk.L2Mode{l2}
	only.Measurement.L2 = l2
	return &only
}

// OnCPU is m for a row of a backend that runs on a CPU: the suite's
// cpu_time_cap and cpu_min_samples in place of time_cap and min_samples,
// where it sets them (a CPU row's cap is its time, and its slowest rows
// stop at min_samples past the cap). Placements follow the samples, as
// every placement takes one (sdk.Placements).
func (s *Suite) OnCPU(m sdk.Measurement) sdk.Measurement {
	if s.CPUTimeCap > 0 {
		m.TimeCap = s.CPUTimeCap
	}
	if s.CPUMinSamples > 0 {
		m.MinSamples = s.CPUMinSamples // at most max_samples (validate.go)
	}
	return m
}
