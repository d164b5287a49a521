// Command wrongpage is a test-only plugin for the decode op whose output
// is computed with one planted indexing fault, so that host tests can
// show that decode's check catches each way a paged kernel goes wrong.
//
// One binary serves every fault: the fault is the part of the
// executable's name after "flashcore-backend-test-wrongpage-" (tests copy
// the binary under each name), so each copy is a separate backend.
//
//	honest         plants nothing: the control, which must PASS
//	past-context   each sequence also reads the page after its length:
//	               the poisoned end of its last page, and the page the
//	               next table entry points at
//	in-order       ignores the block table: page n of sequence b is read
//	               from pool page b·max_pages + n, as if the pages were
//	               laid out in order
//	top-left       aligns the causal mask top-left: new token i sees keys
//	               0 ... i, as PyTorch's is_causal does
//	wrong-kv-head  maps query head h to key/value head h mod kv_heads
//	               instead of h / (heads / kv_heads)
//
// The cpu-reference's decode runs the checked and timed calls; the fault
// then rewrites the output files from the inputs, so the only finding is
// the fault.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flashcore/bench/core/inputs"
	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	"github.com/flashcore/bench/sdk"
)

const namePrefix = "flashcore-backend-test-wrongpage-"

const decodeOp = "decode"

var faults = map[string]bool{"honest": true, "past-context": true, "in-order": true, "top-left": true, "wrong-kv-head": true}

func main() {
	fault := strings.TrimPrefix(filepath.Base(os.Args[0]), namePrefix)
	sdk.Serve(func() sdk.Backend {
		return &wrong{fault: fault, inner: cpureference.New(), cases: map[string]*loaded{}}
	})
}

// wrong is the cpu-reference's decode with a fault planted in its outputs.
type wrong struct {
	fault string
	inner sdk.Backend

	mu    sync.Mutex
	cases map[string]*loaded
}

// loaded is what the fault needs of a case: its request.
type loaded struct {
	req sdk.PrepareRequest
}

func (w *wrong) name() string { return "test-wrongpage-" + w.fault }

func (w *wrong) innerVariant(ctx context.Context) (sdk.Variant, error) {
	d, err := w.inner.Describe(ctx)
	if err != nil || len(d.Variants) != 1 {
		return sdk.Variant{}, fmt.Errorf("the cpu-reference described %d variants (%v), want one", len(d.Variants), err)
	}
	return d.Variants[0], nil
}

// Describe is the cpu-reference's decode under this plugin's name.
func (w *wrong) Describe(ctx context.Context) (sdk.Description, error) {
	d, err := w.inner.Describe(ctx)
	if err != nil {
		return d, err
	}
	v, err := w.innerVariant(ctx)
	if err != nil {
		return sdk.Description{}, err
	}
	if !faults[w.fault] {
		return sdk.Description{Name: w.name(), Version: "test", Available: false,
			UnavailableReason: fmt.Sprintf("unknown fault %q", w.fault)}, nil
	}
	d.Name, d.Version = w.name(), "test"
	d.Variants = []sdk.Variant{{
		Name:         w.name(),
		Description:  "test only: the cpu-reference's decode, with the fault " + w.fault,
		Ops:          []string{decodeOp},
		Capabilities: v.CapabilitiesOf(decodeOp),
	}}
	return d, nil
}

func (w *wrong) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if req.Variant != w.name() || req.Op != decodeOp {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported,
			Summary: fmt.Sprintf("%s runs the variant %q of op decode alone", w.name(), w.name())}}}, nil
	}
	v, err := w.innerVariant(ctx)
	if err != nil {
		return sdk.Prepared{}, err
	}
	inner := req
	inner.Variant = v.Name
	prepared, err := w.inner.Prepare(ctx, inner)
	if err == nil && len(prepared.Diagnostics) == 0 {
		w.mu.Lock()
		w.cases[req.CaseID] = &loaded{req: req}
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
	return fetched, w.plant(c, c.req.Outputs[0].Path)
}

// Run takes the cpu-reference's samples, then rewrites the timed output.
func (w *wrong) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	c, err := w.lookup(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	samples, err := w.inner.Run(ctx, req)
	if err != nil || len(req.Outputs) == 0 {
		return samples, err
	}
	return samples, w.plant(c, req.Outputs[0].Path)
}

func (w *wrong) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	w.mu.Lock()
	delete(w.cases, req.CaseID)
	w.mu.Unlock()
	return w.inner.Release(ctx, req)
}

// plant writes o as the fault computes it, in float64, from the inputs.
func (w *wrong) plant(c *loaded, path string) error {
	if w.fault == "honest" {
		return nil
	}
	raw := map[string][]byte{}
	for _, t := range c.req.Inputs {
		data, err := os.ReadFile(t.Path)
		if err != nil {
			return err
		}
		raw[t.Name] = data
	}
	q, k := c.req.Inputs[0], c.req.Inputs[1]
	batch, qLen, heads, dim := q.Dims[0], q.Dims[1], q.Dims[2], q.Dims[3]
	pages, pageSize, kvHeads := k.Dims[0], k.Dims[1], k.Dims[2]
	maxPages := c.req.Inputs[3].Dims[1]
	causal := c.req.Params["causal"] == "true"
	qs := inputs.Decode(q.DType, raw["q"])
	ks := inputs.Decode(q.DType, raw["k_cache"])
	vs := inputs.Decode(q.DType, raw["v_cache"])
	table, lengths := inputs.DecodeInt32s(raw["block_table"]), inputs.DecodeInt32s(raw["cache_seqlens"])
	out := make([]float64, len(qs))
	scale := 1 / math.Sqrt(float64(dim))
	for b := range batch {
		length := lengths[b]
		last := length - 1
		if w.fault == "past-context" {
			last = min((length/pageSize+1)*pageSize, maxPages*pageSize) - 1
		}
		for i := range qLen {
			pos := length - qLen + i
			hi := last
			if causal {
				hi = pos
				if w.fault == "top-left" {
					hi = i
				}
			}
			if w.fault == "past-context" {
				hi = last
			}
			for h := range heads {
				kvh := h / (heads / kvHeads)
				if w.fault == "wrong-kv-head" {
					kvh = h % kvHeads
				}
				at := func(j int) int {
					page := table[b*maxPages+j/pageSize]
					if w.fault == "in-order" {
						page = (b*maxPages + j/pageSize) % pages
					}
					return ((page*pageSize+j%pageSize)*kvHeads + kvh) * dim
				}
				row := ((b*qLen+i)*heads + h) * dim
				scores := make([]float64, hi+1)
				peak := math.Inf(-1)
				for j := 0; j <= hi; j++ {
					var dot float64
					for e := range dim {
						dot += qs[row+e] * ks[at(j)+e]
					}
					scores[j] = dot * scale
					peak = max(peak, scores[j])
				}
				var sum float64
				for j := 0; j <= hi; j++ {
					p := math.Exp(scores[j] - peak)
					sum += p
					for e := range dim {
						out[row+e] += p * vs[at(j)+e]
					}
				}
				for e := range dim {
					out[row+e] /= sum
				}
			}
		}
	}
	return os.WriteFile(path, inputs.Encode(q.DType, out), 0o600)
}
