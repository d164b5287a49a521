//go:build cuda

package cudakit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/flashcore/bench/sdk"
)

// Release frees the case. Releasing an unknown case does nothing.
func (b *Backend) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cases[req.CaseID]
	if !ok {
		return nil
	}
	delete(b.cases, req.CaseID)
	if b.lost != nil {
		return nil // the memory goes with the context
	}
	if err := b.do(c.free); err != nil {
		return fmt.Errorf("release %s: %w", req.CaseID, err)
	}
	return nil
}

// CloseForExit leaves the context, its device memory and modules to the
// process's exit (sdk.ExitCloser), which frees them faster than Close.
func (b *Backend) CloseForExit() error { return nil }

// Close frees every case and destroys the context.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shutdown()
}

func (b *Backend) shutdown() error {
	if b.worker == nil {
		return nil
	}
	var errs []error
	if b.lost == nil {
		errs = append(errs, b.worker.Do(func() error {
			var errs []error
			for _, id := range slices.Sorted(maps.Keys(b.cases)) {
				errs = append(errs, b.cases[id].free())
			}
			if b.timer != nil {
				errs = append(errs, b.timer.Close())
			}
			errs = append(errs, b.startEv.Destroy(), b.stopEv.Destroy())
			if b.module != nil {
				errs = append(errs, b.module.Unload())
			}
			for _, key := range slices.Sorted(maps.Keys(b.images)) {
				errs = append(errs, b.images[key].Unload())
			}
			return errors.Join(errs...)
		}))
	}
	errs = append(errs, b.worker.Close())
	b.worker, b.module, b.timer, b.startEv, b.stopEv = nil, nil, nil, nil, nil
	clear(b.cases)
	clear(b.kernels)
	clear(b.images)
	return errors.Join(errs...)
}
