//go:build cuda

package cudakit

import (
	"context"
	"fmt"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// Fetch poisons every output, runs the case once and writes each output to
// its file.
func (b *Backend) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.preparedCase(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	var out [][]byte
	err = b.do(func() error {
		if err := c.poisonOutputs(); err != nil {
			return err
		}
		if err := c.run(); err != nil {
			return err
		}
		out, err = c.downloadOutputs()
		return err
	})
	if err != nil {
		return sdk.Fetched{}, fmt.Errorf("fetch %s: %w", req.CaseID, err)
	}
	for i, t := range c.outputs {
		if err := writeOutput(t.path, out[i]); err != nil {
			return sdk.Fetched{}, fmt.Errorf("fetch %s: %w", req.CaseID, err)
		}
	}
	return sdk.Fetched{}, nil
}

// Run takes kernel-time samples under the measurement contract, then
// call-time samples (see sampler).
func (b *Backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.preparedCase(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	paths, err := timedOutputPaths(req, c.outputNames())
	if err != nil {
		return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
	}
	s := &sampler{b: b, c: c, cold: req.Measurement.L2 == sdk.L2Cold}
	c.marking = b.profiled
	defer func() { c.marking = false }()
	var samples sdk.Samples
	var timedOutputs [][]byte
	err = b.do(func() error {
		if len(paths) > 0 {
			// Poisoned before the first run, so a timed launch that
			// writes nothing leaves poison for the host to find.
			if err := c.poisonOutputs(); err != nil {
				return err
			}
		}
		var err error
		if samples, err = s.collect(ctx, req.Measurement); err != nil || len(paths) == 0 {
			return err
		}
		timedOutputs, err = c.downloadOutputs()
		return err
	})
	switch {
	case gpu.IsOutOfMemory(err):
		return sdk.Samples{}, fmt.Errorf("out of memory: run %s: %w", req.CaseID, err)
	case err != nil:
		return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
	}
	for i, path := range paths {
		if err := writeOutput(path, timedOutputs[i]); err != nil {
			return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
		}
	}
	sdk.MarkPhase(ctx, sdk.PhaseOutput)
	return samples, nil
}
