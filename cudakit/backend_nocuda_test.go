//go:build !cuda

package cudakit

import (
	"context"
	"errors"
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

func TestWithoutCUDAEveryCaseIsRefused(t *testing.T) {
	b := New(Spec{Name: "cuda-test", Version: "1", Variant: sdk.Variant{Name: "cuda-test"}})
	ctx := context.Background()
	d, err := b.Describe(ctx)
	if err != nil || d.Available || d.UnavailableReason != ReasonNoCUDA || d.Name != "cuda-test" || len(d.Variants) != 1 {
		t.Errorf("Describe = %+v, %v", d, err)
	}
	if _, err := b.Prepare(ctx, sdk.PrepareRequest{}); !errors.Is(err, gpu.ErrNoCUDA) {
		t.Errorf("Prepare: %v, want ErrNoCUDA", err)
	}
}
