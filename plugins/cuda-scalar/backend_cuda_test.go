//go:build cuda

package cudascalar

import (
	"context"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	_ "github.com/flashcore/bench/cudakit/gpu/gputest" // skip the binary without a GPU
	"github.com/flashcore/bench/sdk"
)

// Output correctness, refusals and sampling are checked by TestConformance
// on the plugin binary; this logs kernel times, in process.
func TestTimingOnGPU(t *testing.T) {
	cudatest.Timing(t, New(), tunables)
}

// rmsnorm in process in every dtype, checked by the op's own check and
// timed.
func TestRMSNormOnGPU(t *testing.T) {
	cudatest.CheckOp(t, New(), rmsnormCases(t))
}

// An op the variant does not list is an Unsupported diagnostic, before any
// file is read (the request names none).
func TestRefusesAnOpItDoesNotRun(t *testing.T) {
	b := New().(*cudakit.Backend)
	t.Cleanup(func() { b.Close() })
	p, err := b.Prepare(context.Background(), sdk.PrepareRequest{CaseID: "softmax-r1-c8-fp16", Op: "softmax",
		Params: map[string]string{"rows": "1", "cols": "8", "dtype": "fp16"}})
	if err != nil || len(p.Diagnostics) != 1 || p.Diagnostics[0].Severity != sdk.Unsupported ||
		p.Diagnostics[0].Summary != "op softmax not supported: cuda-scalar runs attention, rmsnorm" {
		t.Errorf("Prepare = %+v, %v; want an unsupported op", p, err)
	}
}
