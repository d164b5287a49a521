//go:build cuda

package cudakit

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// Prepare checks the case, reads and hashes its inputs, and uploads them.
// A case the plugin cannot run (an op it does not run, a shape outside the
// capabilities, a plan it has not) comes back as an Unsupported
// diagnostic, before anything is read or allocated.
func (b *Backend) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return sdk.Prepared{}, err
	}
	if _, ok := b.cases[req.CaseID]; ok {
		return sdk.Prepared{}, fmt.Errorf("case %s is already prepared", req.CaseID)
	}
	if req.Variant != "" && req.Variant != b.spec.Variant.Name {
		return unsupported("%s has no variant %q (it has %s)", b.spec.Name, req.Variant, b.spec.Variant.Name), nil
	}
	if reason := b.spec.notServed(req); reason != "" {
		return unsupported("%s", reason), nil
	}
	tunables, err := sdk.ResolveTunables(b.spec.Variant.Tunables, opName(req), req.Tunables)
	if err != nil {
		return unsupported("%v", err), nil
	}
	p, reason, err := b.spec.plan(req, tunables)
	switch {
	case err != nil:
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	case reason != "":
		return unsupported("%s", reason), nil
	}
	image, err := b.image(tunables)
	if err != nil {
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	}
	in, err := readTensors(p.inputs)
	if err != nil {
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	}
	var c *deviceCase
	err = b.do(func() error {
		steps, facts, why, err := b.steps(image, p.launch)
		if err != nil || why != "" {
			reason = why
			return err
		}
		c, err = b.upload(p, steps, in)
		if err != nil {
			return err
		}
		c.facts = mergeFacts(b.buildFacts(image), facts, tunableFacts(tunables), scratchFacts(p.launch))
		return nil
	})
	switch {
	case gpu.IsOutOfMemory(err):
		var outputs int64
		for _, t := range p.outputs {
			outputs += t.bytes
		}
		return sdk.Prepared{}, fmt.Errorf("out of memory: case %s needs %d bytes of device memory for %s and %d of scratch: %w",
			req.CaseID, in.bytes()+outputs, p.tensorLabels(), p.launch.ScratchBytes(), err)
	case err != nil:
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	case reason != "":
		return unsupported("%s", reason), nil
	}
	c.caseID, c.label = req.CaseID, sdk.RowLabel(cmp.Or(req.Variant, b.spec.Variant.Name), req.Tunables)
	b.cases[req.CaseID] = c
	return sdk.Prepared{LoadedSHA256: in.sha256, Facts: c.facts}, nil
}

// steps looks up, fits and describes every kernel of the launch, on the
// CUDA thread. A launch that cannot fit comes back as a reason.
func (b *Backend) steps(img *Image, l Launch) ([]step, map[string]string, string, error) {
	module, key, err := b.moduleFor(img)
	if err != nil {
		return nil, nil, "", err
	}
	var steps []step
	facts := map[string]string{}
	for i, sl := range l.Steps() {
		k, err := b.kernel(module, key, img.Symbol(sl.Function))
		if err != nil {
			return nil, nil, "", err
		}
		occupancy, why, err := b.fit(k, sl)
		if err != nil || why != "" {
			return nil, nil, why, err
		}
		steps = append(steps, step{launch: sl, kernel: k})
		prefix := ""
		if i > 0 {
			prefix = fmt.Sprintf("%s%d.", FactStepPrefix, i+1)
		}
		for name, value := range launchFacts(sl, k.res, occupancy) {
			facts[prefix+name] = value
		}
	}
	if len(steps) > 1 {
		names := make([]string, len(steps))
		for i, s := range steps {
			names[i] = s.launch.Function
		}
		facts[FactKernelFunction] = strings.Join(names, " + ")
	}
	return steps, facts, "", nil
}
