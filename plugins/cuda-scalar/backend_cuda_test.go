//go:build cuda

package cudascalar

import (
	"context"
	"slices"
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

// rmsnorm in process, checked by the op's own check and timed. The
// variant's dtypes are widened to fp32 for this backend alone, so that the
// fp32 kernel, which the host never sends a case (the dtypes are
// attention's too), is checked as well.
func TestRMSNormOnGPU(t *testing.T) {
	s := spec()
	s.Variant.Capabilities.DTypes = append(slices.Clone(s.Variant.Capabilities.DTypes), sdk.FP32)
	cudatest.CheckOp(t, cudakit.New(s), rmsnormCases(t))
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
