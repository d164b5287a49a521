package cpureference

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	attentionop "github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// maskedCase writes the inputs of the forward case of shape s with the
// mask axes set, as the host generates and writes them, and returns the
// case, its inputs and the request that names them.
func maskedCase(t *testing.T, s sdk.Shape, axes map[string]string) (op.Case, *op.Inputs, sdk.PrepareRequest) {
	t.Helper()
	p := attentionop.ParamsOf(s)
	for k, v := range axes {
		p[k] = v
	}
	o := ops.Of(op.Case{Op: attentionop.Name})
	p = ops.Complete(o, p)
	c := op.Case{ID: o.CaseID(p, op.Normal), Op: attentionop.Name, Params: p, Distribution: op.Normal}
	in := o.Generate(1, c)
	dir := t.TempDir()
	files := ops.InputFiles(in, dir, "")
	for i, f := range files {
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return c, in, ops.PrepareRequest(c, variantName, nil, files, ops.OutputFiles(c, dir, "out"), in.SHA256)
}

// Every mask, through Prepare and Fetch as the host drives them, passes
// the check of flashcore run against the fp64 reference: bottom-right
// with fewer queries than keys (a chunked prefill) and with more (rows
// above the first key see none and are zeros), windows on either side,
// soft-capping, in each dtype, with grouped-query heads.
func TestMasksPassTheCheck(t *testing.T) {
	masks := []map[string]string{
		{"causal_align": "bottom-right"},
		{"causal_align": "bottom-right", "window_left": "9"},
		{"window_left": "5"},
		{"window_left": "4", "window_right": "3"},
		{"softcap": "2"},
		{"causal_align": "bottom-right", "window_left": "16", "softcap": "30"},
	}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		for _, s := range []sdk.Shape{shape(1, 4, 2, 24, 80, 32, true), shape(1, 2, 1, 70, 33, 16, true), shape(2, 2, 2, 40, 40, 16, false)} {
			for _, axes := range masks {
				s.DType = dtype
				c, in, req := maskedCase(t, s, axes)
				t.Run(fmt.Sprintf("%s/%s", dtype, c.ID), func(t *testing.T) {
					b := newBackend()
					mustPrepare(t, b, req)
					if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
						t.Fatalf("Fetch: %v", err)
					}
					checkBackward(t, c, in, readOutputs(t, req.Outputs))
				})
			}
		}
	}
}
