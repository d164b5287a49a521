// Command wrongmask is a test-only plugin for dense attention's masks
// whose output is computed under one planted mistake, so that host tests
// can show that the check catches each way a masked kernel goes wrong.
//
// One binary serves every fault: the fault is the part of the
// executable's name after "flashcore-backend-test-wrongmask-" (tests copy
// the binary under each name), so each copy is a separate backend.
//
//	honest     plants nothing: the control, which must PASS
//	top-left   aligns the causal mask and the window top-left (query row
//	           i at key position i) where the case asks bottom-right, as
//	           a kernel written for PyTorch's is_causal does
//	no-window  ignores the sliding window
//	no-softcap ignores the soft-capping
//
// The cpu-reference runs the checked and timed calls; the fault then
// rewrites the output files, computed in float64 from the inputs under
// the wrong mask, so the only finding is the fault.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	"github.com/flashcore/bench/sdk"
)

const namePrefix = "flashcore-backend-test-wrongmask-"

var faults = map[string]bool{"honest": true, "top-left": true, "no-window": true, "no-softcap": true}

func main() {
	fault := strings.TrimPrefix(filepath.Base(os.Args[0]), namePrefix)
	sdk.Serve(func() sdk.Backend {
		return &wrong{fault: fault, inner: cpureference.New(), cases: map[string]sdk.PrepareRequest{}}
	})
}

// wrong is the cpu-reference's attention with a fault planted in its
// outputs.
type wrong struct {
	fault string
	inner sdk.Backend

	mu    sync.Mutex
	cases map[string]sdk.PrepareRequest
}

func (w *wrong) name() string { return "test-wrongmask-" + w.fault }

// Describe is the cpu-reference's attention under this plugin's name.
func (w *wrong) Describe(ctx context.Context) (sdk.Description, error) {
	d, err := w.inner.Describe(ctx)
	if err != nil {
		return d, err
	}
	if len(d.Variants) != 1 {
		return sdk.Description{}, fmt.Errorf("the cpu-reference described %d variants, want one", len(d.Variants))
	}
	if !faults[w.fault] {
		return sdk.Description{Name: w.name(), Version: "test", Available: false,
			UnavailableReason: fmt.Sprintf("unknown fault %q", w.fault)}, nil
	}
	d.Name, d.Version = w.name(), "test"
	d.Variants = []sdk.Variant{{
		Name:         w.name(),
		Description:  "test only: the cpu-reference's attention, with the fault " + w.fault,
		Ops:          []string{attention.Name},
		Capabilities: d.Variants[0].CapabilitiesOf(attention.Name),
	}}
	return d, nil
}

func (w *wrong) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if req.Variant != w.name() || (req.Op != "" && req.Op != attention.Name) {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported,
			Summary: fmt.Sprintf("%s runs the variant %q of op attention alone", w.name(), w.name())}}}, nil
	}
	d, err := w.inner.Describe(ctx)
	if err != nil {
		return sdk.Prepared{}, err
	}
	inner := req
	inner.Variant = d.Variants[0].Name
	prepared, err := w.inner.Prepare(ctx, inner)
	if err == nil && len(prepared.Diagnostics) == 0 {
		w.mu.Lock()
		w.cases[req.CaseID] = req
		w.mu.Unlock()
	}
	return prepared, err
}

func (w *wrong) lookup(caseID string) (sdk.PrepareRequest, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	req, ok := w.cases[caseID]
	if !ok {
		return req, fmt.Errorf("unknown case %q", caseID)
	}
	return req, nil
}

// Fetch runs the cpu-reference's checked run, then rewrites its output
// with the fault.
func (w *wrong) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	c, err := w.lookup(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	fetched, err := w.inner.Fetch(ctx, req)
	if err != nil || len(fetched.Diagnostics) > 0 {
		return fetched, err
	}
	return fetched, w.plant(c, c.Files.Output)
}

// Run takes the cpu-reference's samples, then rewrites the timed output.
func (w *wrong) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	c, err := w.lookup(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	samples, err := w.inner.Run(ctx, req)
	if err != nil || req.Output == "" {
		return samples, err
	}
	return samples, w.plant(c, req.Output)
}

func (w *wrong) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	w.mu.Lock()
	delete(w.cases, req.CaseID)
	w.mu.Unlock()
	return w.inner.Release(ctx, req)
}

// plant writes o as the fault computes it: the fp64 attention of the
// inputs under the case's mask with the fault's mistake.
func (w *wrong) plant(req sdk.PrepareRequest, path string) error {
	if w.fault == "honest" {
		return nil
	}
	m := attention.MaskOf(op.Params(req.Params))
	switch w.fault {
	case "top-left":
		m.TopLeft = true
	case "no-window":
		m.Left, m.Right = -1, -1
	case "no-softcap":
		m.Softcap = 0
	}
	t := &inputs.Tensors{Shape: req.Shape, Mask: &m}
	for _, f := range []struct {
		dst  *[]byte
		path string
	}{{&t.Q, req.Files.Q}, {&t.K, req.Files.K}, {&t.V, req.Files.V}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		*f.dst = data
	}
	every := op.CheckSettings{FullCheckMaxPairs: reference.Pairs(req.Shape), SampledRows: 1}
	var out []float64
	for _, row := range reference.Compute(t, reference.Rows(req.Shape, every, 0)) {
		out = append(out, row...)
	}
	return os.WriteFile(path, inputs.Encode(req.Shape.DType, out), 0o600)
}
