package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// Refusal is a request a variant must answer with an Unsupported
// diagnostic.
type Refusal struct {
	// Why names what the request asks for that the variant did not declare.
	Why      string
	Shape    sdk.Shape
	Tunables map[string]string
}

// Undeclared returns, for each limit the variant declares, one shape just
// outside it: the first of Cases changed in that one respect. A variant that
// declares every dtype and mode, any head dim, both maskings, GQA and
// Sq ≠ Sk, with no length or element limit, gets none.
func Undeclared(v sdk.Variant) []Refusal {
	cases := Cases(v)
	if len(cases) == 0 {
		return nil
	}
	caps, base := v.CapabilitiesOf("attention"), attention.ShapeOf(cases[0].Case)
	var out []Refusal
	add := func(why string, change func(*sdk.Shape)) {
		s := base
		change(&s)
		if caps.Unsupported(s) != "" { // always, unless a change above is wrong
			out = append(out, Refusal{Why: why, Shape: s})
		}
	}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		if !slices.Contains(caps.DTypes, dtype) {
			add("dtype "+string(dtype), func(s *sdk.Shape) { s.DType = dtype })
			break
		}
	}
	for _, mode := range sdk.Modes {
		if !caps.RunsMode(mode) {
			add("mode "+string(mode), func(s *sdk.Shape) {
				s.Mode = mode
				if mode == sdk.Forward {
					s.Mode = ""
				}
			})
			break
		}
	}
	if len(caps.HeadDims) > 0 {
		d := undeclaredHeadDim(caps.HeadDims)
		add(fmt.Sprintf("head dim %d", d), func(s *sdk.Shape) { s.HeadDim = d })
	}
	if !caps.Causal {
		add("causal masking", func(s *sdk.Shape) { s.Causal = true })
	}
	if !caps.NonCausal {
		add("no masking", func(s *sdk.Shape) { s.Causal = false })
	}
	if !caps.GroupedQueryHeads {
		add("grouped-query heads", func(s *sdk.Shape) { s.Heads, s.KVHeads = 4, 2 })
	}
	if !caps.UnequalSeqLens {
		add("Sq != Sk", func(s *sdk.Shape) { s.SeqK = s.SeqQ + 1 })
	}
	if m := caps.SeqMultiple; m > 1 {
		add(fmt.Sprintf("sequence length not a multiple of %d", m), func(s *sdk.Shape) { s.SeqQ, s.SeqK = s.SeqQ+1, s.SeqK+1 })
	}
	if caps.MaxSeqLen > 0 {
		add(fmt.Sprintf("sequence length %d", caps.MaxSeqLen+1), func(s *sdk.Shape) { s.SeqQ, s.SeqK = caps.MaxSeqLen+1, caps.MaxSeqLen+1 })
	}
	if caps.MaxElements > 0 {
		add(fmt.Sprintf("more than %d elements", caps.MaxElements), func(s *sdk.Shape) {
			s.Batch = caps.MaxElements/(s.Heads*s.SeqQ*s.HeadDim) + 1
		})
	}
	return out
}

// undeclaredHeadDim is a common head dim not among declared.
func undeclaredHeadDim(declared []int) int {
	for _, d := range []int{96, 80, 48, 32, 256} {
		if !slices.Contains(declared, d) {
			return d
		}
	}
	return slices.Max(declared) + 8
}

// invalid are requests no variant may accept, whatever it declares.
func invalid(v sdk.Variant) []Refusal {
	base := attention.ShapeOf(Cases(v)[0].Case)
	uneven := base
	uneven.Heads, uneven.KVHeads = 3, 2
	return []Refusal{
		{Why: "heads not a multiple of kv heads", Shape: uneven},
		{Why: "unknown tunable", Shape: base, Tunables: map[string]string{"no_such_tunable": "1"}},
	}
}

// checkRefusals checks that the variant refuses, with an Unsupported
// diagnostic, every shape outside what it declared and every invalid
// request, and that an unknown variant is not run.
func (k *kit) checkRefusals(t *testing.T, v sdk.Variant) {
	undeclared := Undeclared(v)
	t.Run("undeclared", func(t *testing.T) {
		if len(undeclared) == 0 {
			t.Skip("the variant declares every dtype and mode, any head dim, both maskings, GQA and Sq != Sk, with no limits: no shape lies outside")
		}
		for _, r := range undeclared {
			t.Run(r.Why, func(t *testing.T) {
				if err := k.expectRefusal(v.Name, r); err != nil {
					t.Error(err)
				}
			})
		}
	})
	for _, r := range invalid(v) {
		t.Run(r.Why, func(t *testing.T) {
			if err := k.expectRefusal(v.Name, r); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("unknown variant", func(t *testing.T) {
		// A Go error is a fair answer too: no host sends an unknown variant.
		r := Refusal{Why: "unknown variant", Shape: attention.ShapeOf(Cases(v)[0].Case)}
		prepared, err := k.prepareRefusal("no-such-variant-of-"+v.Name, r)
		if err == nil && unsupportedIn(prepared.Diagnostics) == "" {
			t.Errorf("Prepare ran an unknown variant: %+v", prepared)
		}
	})
}

// expectRefusal checks that the variant answers r with an Unsupported
// diagnostic.
func (k *kit) expectRefusal(variant string, r Refusal) error {
	prepared, err := k.prepareRefusal(variant, r)
	if err != nil {
		return fmt.Errorf("Prepare: %v, want an Unsupported diagnostic for %s (%s)", err, r.Why, r.Shape)
	}
	if unsupportedIn(prepared.Diagnostics) == "" {
		return fmt.Errorf("%s (%s): Prepare answered %+v, want an Unsupported diagnostic given before reading inputs",
			r.Why, r.Shape, prepared.Diagnostics)
	}
	return nil
}

// prepareRefusal sends Prepare for r with input files that do not exist: a
// refusal must come before any input is read. A case it accepts anyway is
// released.
func (k *kit) prepareRefusal(variant string, r Refusal) (sdk.Prepared, error) {
	missing := "/nonexistent/flashcore-conformance/"
	req := sdk.PrepareRequest{CaseID: "refuse " + r.Why, Variant: variant, Shape: r.Shape, Tunables: r.Tunables,
		Files: sdk.Tensors{Q: missing + "q.bin", K: missing + "k.bin", V: missing + "v.bin", Output: missing + "out.bin"}}
	prepared, err := call(k, func(ctx context.Context, api sdk.Backend) (sdk.Prepared, error) { return api.Prepare(ctx, req) })
	if err == nil && unsupportedIn(prepared.Diagnostics) == "" {
		_, _ = call(k, func(ctx context.Context, api sdk.Backend) (struct{}, error) {
			return struct{}{}, api.Release(ctx, sdk.ReleaseRequest{CaseID: req.CaseID})
		})
	}
	return prepared, err
}
