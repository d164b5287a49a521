// Command wronggrad is a test-only plugin whose attention backward is the
// cpu-reference's, correct, with one fault planted in the gradients it
// writes, so that host tests can show that the check of the backward
// modes catches each kind of wrong gradient and names the output it is in.
//
// One binary serves every fault: the fault is the part of the executable's
// name after "flashcore-backend-test-wronggrad-" (tests copy the binary
// under each name), so each copy is a separate backend with its own name.
//
//	honest          plants nothing: the control, which must PASS
//	zero-dk         writes dK as all zeros
//	nan-dq          writes one NaN into dQ
//	swap-dkdv       writes dK where dV goes and dV where dK goes
//	wrong-group     writes dK of each batch entry's first key/value head
//	                over that of its second (grouped-query heads: a group's
//	                gradients sent to another group)
//	transposed-dk   writes each key/value head's dK as [D, Sk] instead of
//	                [Sk, D]
//	noise-dq        adds ±1e-2, the sign drawn per element, to dQ
//	jitter-dq       changes one element of dQ, a different one on every
//	                call, by two units in the last place: runs differ as
//	                atomic accumulation makes them, each within the check
//	late-noise-dq   honest on the first call, then adds ±1e-1 to dQ: a
//	                repeated checked run that is wrong must FAIL
//
// It runs attention's backward modes (bwd and fwd+bwd) alone. The fault
// is planted in the files of the checked run and of every timed run alike,
// so the only finding is the fault.
package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	"github.com/flashcore/bench/sdk"
)

const namePrefix = "flashcore-backend-test-wronggrad-"

func main() {
	fault := strings.TrimPrefix(filepath.Base(os.Args[0]), namePrefix)
	sdk.Serve(func() sdk.Backend {
		return &wrong{fault: fault, inner: cpureference.New(), cases: map[string]*loaded{}}
	})
}

// innerVariant is the cpu-reference's one variant, which requests are
// passed on to.
func (w *wrong) innerVariant(ctx context.Context) (sdk.Variant, error) {
	d, err := w.inner.Describe(ctx)
	if err != nil || len(d.Variants) != 1 {
		return sdk.Variant{}, fmt.Errorf("the cpu-reference described %d variants (%v), want one", len(d.Variants), err)
	}
	return d.Variants[0], nil
}

// wrong is the cpu-reference with a fault planted in its outputs.
type wrong struct {
	fault string
	inner sdk.Backend

	mu    sync.Mutex
	cases map[string]*loaded
}

// loaded is what the fault needs of a case: its shape and output files.
type loaded struct {
	shape   sdk.Shape
	outputs []sdk.TensorFile
	calls   int // plants so far, for the faults that change from call to call
}

func (w *wrong) name() string { return "test-wronggrad-" + w.fault }

// Describe is the cpu-reference's attention, backward modes alone, under
// this plugin's name.
func (w *wrong) Describe(ctx context.Context) (sdk.Description, error) {
	d, err := w.inner.Describe(ctx)
	if err != nil {
		return d, err
	}
	v, err := w.innerVariant(ctx)
	if err != nil {
		return sdk.Description{}, err
	}
	if _, ok := planters[w.fault]; !ok {
		return sdk.Description{Name: w.name(), Version: "test", Available: false,
			UnavailableReason: fmt.Sprintf("unknown fault %q", w.fault)}, nil
	}
	caps := v.CapabilitiesOf("attention")
	caps.Modes = []sdk.Mode{sdk.Backward, sdk.ForwardBackward}
	d.Name, d.Version = w.name(), "test"
	d.Variants = []sdk.Variant{{
		Name:         w.name(),
		Description:  "test only: the cpu-reference's attention backward, with the fault " + w.fault,
		Capabilities: caps,
	}}
	return d, nil
}

func (w *wrong) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if req.Variant != w.name() {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported,
			Summary: fmt.Sprintf("unknown variant %q: %s has only %q", req.Variant, w.name(), w.name())}}}, nil
	}
	if req.Shape.Mode.Or() == sdk.Forward {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported,
			Summary: "mode fwd not supported (runs: bwd, fwd+bwd)"}}}, nil
	}
	v, err := w.innerVariant(ctx)
	if err != nil {
		return sdk.Prepared{}, err
	}
	req.Variant = v.Name
	prepared, err := w.inner.Prepare(ctx, req)
	if err == nil && len(prepared.Diagnostics) == 0 {
		w.mu.Lock()
		w.cases[req.CaseID] = &loaded{shape: req.Shape, outputs: req.Outputs}
		w.mu.Unlock()
	}
	return prepared, err
}

func (w *wrong) lookup(caseID string) (*loaded, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.cases[caseID]
	if !ok {
		return nil, fmt.Errorf("unknown case %q", caseID)
	}
	return c, nil
}

// Fetch runs the cpu-reference's checked run, then plants the fault in
// the files it wrote.
func (w *wrong) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	c, err := w.lookup(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	fetched, err := w.inner.Fetch(ctx, req)
	if err != nil || len(fetched.Diagnostics) > 0 {
		return fetched, err
	}
	return fetched, w.plant(c, c.outputs)
}

// Run takes the cpu-reference's samples, then plants the fault in the
// timed output files.
func (w *wrong) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	c, err := w.lookup(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	samples, err := w.inner.Run(ctx, req)
	if err != nil || len(req.Outputs) == 0 {
		return samples, err
	}
	return samples, w.plant(c, req.Outputs)
}

func (w *wrong) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	w.mu.Lock()
	delete(w.cases, req.CaseID)
	w.mu.Unlock()
	return w.inner.Release(ctx, req)
}

// gradients are the files of dQ, dK and dV, decoded.
type gradients struct {
	dq, dk, dv []float64
}

// plant reads the gradients among files, plants the fault and writes them
// back.
func (w *wrong) plant(c *loaded, files []sdk.TensorFile) error {
	s := c.shape
	paths := map[string]string{}
	for _, f := range files {
		paths[f.Name] = f.Path
	}
	var g gradients
	for _, t := range []struct {
		name string
		dst  *[]float64
	}{{"dq", &g.dq}, {"dk", &g.dk}, {"dv", &g.dv}} {
		raw, err := os.ReadFile(paths[t.name])
		if err != nil {
			return err
		}
		*t.dst = inputs.Decode(s.DType, raw)
	}
	w.mu.Lock()
	c.calls++
	call := c.calls
	w.mu.Unlock()
	planters[w.fault](s, &g, call)
	for name, values := range map[string][]float64{"dq": g.dq, "dk": g.dk, "dv": g.dv} {
		if err := os.WriteFile(paths[name], inputs.Encode(s.DType, values), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// planters plant each fault in honest gradients of shape s.
// call counts the plants of the case, from 1.
var planters = map[string]func(s sdk.Shape, g *gradients, call int){
	"honest":  func(sdk.Shape, *gradients, int) {},
	"zero-dk": func(_ sdk.Shape, g *gradients, _ int) { clear(g.dk) },
	"nan-dq":  func(_ sdk.Shape, g *gradients, _ int) { g.dq[len(g.dq)/3] = math.NaN() },
	"swap-dkdv": func(_ sdk.Shape, g *gradients, _ int) {
		g.dk, g.dv = g.dv, g.dk
	},
	"wrong-group": func(s sdk.Shape, g *gradients, _ int) {
		if s.KVHeads < 2 {
			return // one group: nowhere else to send it
		}
		n := s.SeqK * s.HeadDim
		for b := range s.Batch {
			first := b * s.KVHeads * n
			copy(g.dk[first+n:first+2*n], g.dk[first:first+n])
		}
	},
	"transposed-dk": func(s sdk.Shape, g *gradients, _ int) {
		n, d := s.SeqK*s.HeadDim, s.HeadDim
		transposed := make([]float64, len(g.dk))
		for head := range len(g.dk) / n {
			for j := range s.SeqK {
				for x := range d {
					transposed[head*n+x*s.SeqK+j] = g.dk[head*n+j*d+x]
				}
			}
		}
		g.dk = transposed
	},
	"noise-dq": func(_ sdk.Shape, g *gradients, _ int) { addNoise(g.dq, 1e-2) },
	"jitter-dq": func(s sdk.Shape, g *gradients, call int) {
		i := call * 7919 % len(g.dq)
		g.dq[i] *= 1 + 2*math.Ldexp(1, -mantissaBits(s.DType))
	},
	"late-noise-dq": func(_ sdk.Shape, g *gradients, call int) {
		if call > 1 {
			addNoise(g.dq, 1e-1)
		}
	},
}

// addNoise adds ±size to every element, the sign drawn per element.
func addNoise(x []float64, size float64) {
	random := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] += size * (2*float64(random.IntN(2)) - 1)
	}
}

// mantissaBits is the dtype's stored mantissa width.
func mantissaBits(d sdk.DType) int {
	switch d {
	case sdk.FP16:
		return 10
	case sdk.BF16:
		return 7
	}
	return 23
}
