//go:build !cuda

package cudawmma

import (
	"context"
	"testing"
)

func TestDescribesItselfAsBuiltWithoutCUDA(t *testing.T) {
	d, err := New().Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Available || d.UnavailableReason != "built without CUDA" || d.Name != name || len(d.Variants) != 1 {
		t.Errorf("Describe = %+v, want %s unavailable: built without CUDA, with its variant", d, name)
	}
}
