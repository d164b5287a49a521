//go:build !cuda

package cudascalar

import (
	"context"
	"slices"
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

func TestDescribesBothOpsWithoutCUDA(t *testing.T) {
	d, err := New().Describe(context.Background())
	if err != nil || len(d.Variants) != 1 || !slices.Equal(d.Variants[0].Ops, []string{"attention", "rmsnorm"}) {
		t.Errorf("Describe = %+v, %v; want the variant with its ops attention and rmsnorm", d, err)
	}
}
