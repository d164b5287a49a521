package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
)

// RunEvaluator measures a batch of configurations as one flashcore run of
// the case: one row per configuration, through the runner, so every
// candidate is a real plugin call under the measurement contract, checked
// against the fp64 reference, with the runner's handling of crashes and
// hangs (the plugin is restarted for the next row).
type RunEvaluator struct {
	// Suite supplies the measurement contract, tolerances and timeouts.
	// Only its primary L2 mode is measured.
	Suite   *suite.Suite
	Plugin  host.Plugin
	Variant string
	// HostOptions are passed to every plugin start.
	HostOptions host.Options
	// Progress receives the runner's line per row; nil discards.
	Progress io.Writer
	// ResultsPath, when set, is where each batch's run is saved (the last
	// batch's run stays there).
	ResultsPath string
}

// Evaluate runs the batch. Rows that end in anything but a timed PASS are
// rejected with their reason.
func (e *RunEvaluator) Evaluate(ctx context.Context, c op.Case, configs []Config, done func(Evaluation) error) error {
	s := *e.Suite
	s.Cases = []op.Case{c}
	s.L2Modes = s.L2Modes[:1]
	s.Measurement.L2 = s.L2Modes[0]
	selection := suite.BackendSelection{Name: e.Plugin.Name, Variants: []string{e.Variant}}
	for _, cfg := range configs {
		selection.Configs = append(selection.Configs, cfg)
	}
	s.Backends = []suite.BackendSelection{selection}
	run, err := runner.Run(ctx, runner.Config{
		Suite:       &s,
		Plugins:     []host.Plugin{e.Plugin},
		ResultsPath: e.ResultsPath,
		Command:     "flashcore tune",
		Progress:    e.Progress,
		HostOptions: e.HostOptions,
		OnResult:    func(r results.Result) error { return done(evaluationOf(r)) },
	})
	if errors.Is(err, runner.ErrInterrupted) {
		return nil // the caller sees ctx end
	}
	if err != nil {
		return err
	}
	if len(run.Backends) == 1 && !run.Backends[0].Available {
		return fmt.Errorf("backend %s became unavailable: %s", e.Plugin.Name, run.Backends[0].UnavailableReason)
	}
	return nil
}

// evaluationOf judges one row: only a PASS with a kernel time competes.
func evaluationOf(r results.Result) Evaluation {
	e := Evaluation{Config: Config(r.Tunables), Verdict: string(r.Status), Reason: r.Reason}
	if e.Config == nil {
		e.Config = Config{}
	}
	t, timed := r.Primary()
	switch {
	case r.Status != results.StatusPass:
		if e.Reason == "" {
			e.Reason = string(r.Status)
		}
	case !timed || !(t.Kernel.MedianNs > 0):
		e.Reason = "passed its check but has no kernel time"
	default:
		e.Accepted = true
		e.KernelNs = t.Kernel.MedianNs
		if hw := t.Kernel.RelNoise * t.Kernel.MedianNs; !math.IsNaN(hw) && !math.IsInf(hw, 0) {
			e.HalfWidthNs = hw
		}
	}
	return e
}
