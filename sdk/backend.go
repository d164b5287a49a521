package sdk

import "context"

// Backend is the one interface a plugin implements. The host calls, for each
// case: Prepare, Fetch (the checked run), Run (timed samples), Release.
// Calls for one backend never overlap.
type Backend interface {
	// Describe says who the backend is and what it can run. It must be cheap
	// and must not fail on a machine that lacks the backend's hardware:
	// report Available=false with a reason instead.
	Describe(ctx context.Context) (Description, error)
	// Prepare allocates buffers and loads the inputs of one case.
	Prepare(ctx context.Context, req PrepareRequest) (Prepared, error)
	// Fetch poisons the output buffer, runs the case once and writes the
	// output file.
	Fetch(ctx context.Context, req FetchRequest) (Fetched, error)
	// Run does warm-up and timed samples under the measurement contract.
	Run(ctx context.Context, req RunRequest) (Samples, error)
	// Release frees the case.
	Release(ctx context.Context, req ReleaseRequest) error
}

// Closer is an optional ability: a backend that holds a device context or a
// worker process implements it, and Serve calls Close before exiting.
type Closer interface {
	Close() error
}

// ExitCloser is an optional ability of a Closer whose process is about to
// exit: Serve, which exits right after, calls CloseForExit instead of
// Close. What the exit frees anyway (a CUDA context, its device memory and
// modules) it may leave to the exit, which frees it faster: on an H100 the
// CUDA plugins' explicit teardown made their stop 0.4 s, where a process
// that exits with its context takes about 0.13 s. What must outlive the
// process (a file to flush, a child to end) it still does.
type ExitCloser interface {
	CloseForExit() error
}
