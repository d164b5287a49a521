//go:build !cuda

package cudakit

import (
	"context"
	"fmt"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// Backend, built without the cuda tag, describes its plugin as unavailable
// ("built without CUDA") and refuses every case.
type Backend struct {
	spec Spec
}

var (
	_ sdk.Backend    = (*Backend)(nil)
	_ sdk.Closer     = (*Backend)(nil)
	_ sdk.ExitCloser = (*Backend)(nil)
)

// New returns the backend of spec.
func New(spec Spec) *Backend { return &Backend{spec: spec} }

// Describe reports the plugin as unavailable.
func (b *Backend) Describe(ctx context.Context) (sdk.Description, error) {
	d := baseDescription(b.spec)
	d.UnavailableReason = ReasonNoCUDA
	return d, nil
}

func (b *Backend) unavailable() error {
	return fmt.Errorf("%s is unavailable: %w", b.spec.Name, gpu.ErrNoCUDA)
}

// Prepare returns ErrNoCUDA.
func (b *Backend) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	return sdk.Prepared{}, b.unavailable()
}

// Fetch returns ErrNoCUDA.
func (b *Backend) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	return sdk.Fetched{}, b.unavailable()
}

// Run returns ErrNoCUDA.
func (b *Backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	return sdk.Samples{}, b.unavailable()
}

// Release does nothing.
func (b *Backend) Release(ctx context.Context, req sdk.ReleaseRequest) error { return nil }

// Close does nothing.
func (b *Backend) Close() error { return nil }

// CloseForExit does nothing.
func (b *Backend) CloseForExit() error { return nil }
