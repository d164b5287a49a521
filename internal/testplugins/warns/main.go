// Command warns is a test-only plugin: the cpu-reference, whose Runs carry
// a warning diagnostic, as a Run does whose host stalled while it queued
// the timed calls ("kernel-time samples may include host launch gaps").
// FLASHCORE_TEST_WARN_RUNS says how many Runs warn: a count from the first
// (default 1), or "all".
package main

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"

	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	"github.com/flashcore/bench/sdk"
)

const name = "test-warns"

func main() {
	w := &warns{Backend: cpureference.New(), all: os.Getenv("FLASHCORE_TEST_WARN_RUNS") == "all"}
	n, err := strconv.Atoi(os.Getenv("FLASHCORE_TEST_WARN_RUNS"))
	if err != nil {
		n = 1
	}
	w.left.Store(int64(n))
	sdk.Serve(func() sdk.Backend { return w })
}

type warns struct {
	sdk.Backend
	all   bool
	left  atomic.Int64
	inner string // the cpu-reference's variant, which requests are passed on to
}

func (w *warns) Describe(ctx context.Context) (sdk.Description, error) {
	d, err := w.Backend.Describe(ctx)
	if err != nil || len(d.Variants) != 1 {
		return d, err
	}
	w.inner = d.Variants[0].Name
	d.Name, d.Version = name, "test"
	d.Variants[0].Name = name
	d.Variants[0].Description = "test only: the cpu-reference, its Runs warning of host launch gaps"
	return d, nil
}

func (w *warns) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	if req.Variant == name {
		req.Variant = w.inner
	}
	return w.Backend.Prepare(ctx, req)
}

func (w *warns) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	s, err := w.Backend.Run(ctx, req)
	if err == nil && (w.all || w.left.Add(-1) >= 0) {
		s.Diagnostics = append(s.Diagnostics, sdk.Diagnostic{
			Severity: sdk.Warning,
			Summary:  "1 kernel-time samples may include host launch gaps",
			Detail:   "planted by the test plugin",
		})
	}
	return s, err
}
