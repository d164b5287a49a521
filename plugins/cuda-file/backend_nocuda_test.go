//go:build !cuda

package cudafile

import (
	"context"
	"testing"

	"github.com/flashcore/bench/core/host"
)

func TestDescribesItselfAsBuiltWithoutCUDA(t *testing.T) {
	d, err := newBackend(host.CUDAFileArgs("splitkv", example)).Describe(context.Background())
	if err != nil || d.Available || d.UnavailableReason != "built without CUDA" {
		t.Errorf("Describe = %+v, %v; want unavailable: built without CUDA", d, err)
	}
}
