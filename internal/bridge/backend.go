package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/flashcore/bench/internal/interpreter"
	"github.com/flashcore/bench/sdk"
)

// PythonEnv names the variable that chooses the worker's interpreter.
const PythonEnv = interpreter.Env

// Interpreter is the Python the worker runs on (interpreter.For):
// $FLASHCORE_PYTHON, else the project's virtual environment when the
// plugin runs from a checkout, else python3 from PATH.
func Interpreter() string {
	exe, _ := os.Executable()
	return interpreter.For(os.Environ(), exe)
}

// Config says which Python backend a plugin serves.
type Config struct {
	// Name is the backend's name in tables, e.g. "pytorch-sdpa".
	Name string
	// Module is the Python module that implements the backend; the worker
	// imports it and builds Module.Backend(device).
	Module string
	// Scripts holds the plugin's own *.py files at its root, Module's
	// among them (usually an embed.FS); nil when Module is one of the
	// bridge's own (python-file's pyfile_backend).
	Scripts fs.FS
	// Output receives the worker's stdout and stderr; nil means the
	// plugin's stderr at the time the worker starts.
	Output io.Writer
	// Env is added to the worker's environment (KEY=VALUE) and wins over
	// the plugin's own; the python-file plugin names its file there.
	Env []string
}

// Backend is an sdk.Backend whose calls are answered by a Python worker.
// It starts the worker at the first call that needs it and keeps it for
// the life of the plugin process.
type Backend struct {
	config Config

	mu          sync.Mutex
	scriptsDir  string  // written at the first start, removed by Close
	worker      *worker // nil before the first start
	unavailable string  // why the worker cannot run here, once known
}

var (
	_ sdk.Backend = (*Backend)(nil)
	_ sdk.Closer  = (*Backend)(nil)
)

// New returns a Backend for config. It starts nothing.
func New(config Config) *Backend { return &Backend{config: config} }

// unavailableError is a worker that cannot run on this machine.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }

// Describe starts the worker if needed and asks it for the device and
// variants. A machine without python3, torch or triton gets Available=false
// with the reason, not an error.
func (b *Backend) Describe(ctx context.Context) (sdk.Description, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, err := b.ensureWorker(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return sdk.Description{}, ctx.Err()
		}
		return sdk.Description{Name: b.config.Name, Available: false, UnavailableReason: err.Error()}, nil
	}
	description, err := describe(ctx, w)
	if err != nil {
		return sdk.Description{}, err
	}
	description.Name = b.config.Name
	description.Available = true
	return description, nil
}

// describe is w's description, asked of it once.
func describe(ctx context.Context, w *worker) (sdk.Description, error) {
	if w.described == nil {
		var description sdk.Description
		if err := w.call(ctx, "describe", nil, &description); err != nil {
			return sdk.Description{}, err
		}
		w.described = &description
	}
	return *w.described, nil
}

// Prepare starts the worker if needed (again, if it died) and has it load
// the case, unless the variant cannot run it: then the answer is an
// Unsupported diagnostic, decided here in Go (unsupported), and the worker
// reads nothing.
func (b *Backend) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, err := b.ensureWorker(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return sdk.Prepared{}, ctx.Err()
		}
		return sdk.Prepared{}, fmt.Errorf("%s: %w", b.config.Name, err)
	}
	description, err := describe(ctx, w)
	if err != nil {
		return sdk.Prepared{}, err
	}
	if reason := unsupported(description, req); reason != "" {
		return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported, Summary: req.Variant + ": " + reason}}}, nil
	}
	var prepared sdk.Prepared
	err = w.call(ctx, "prepare", req, &prepared)
	return prepared, err
}

// Fetch has the worker poison, run and write the output of the case.
func (b *Backend) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	var fetched sdk.Fetched
	err := b.callRunning(ctx, "fetch", req, &fetched)
	return fetched, err
}

// Run has the worker take the timed samples of the case.
func (b *Backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	var samples sdk.Samples
	err := b.callRunning(ctx, "run", req, &samples)
	return samples, err
}

// Release has the worker forget the case. With no worker running there is
// nothing to free.
func (b *Backend) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.worker == nil || !b.worker.alive() {
		return nil
	}
	return b.worker.call(ctx, "release", req, nil)
}

// Close ends the worker and removes its scripts.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.worker != nil {
		b.worker.stop()
		b.worker = nil
	}
	if b.scriptsDir == "" {
		return nil
	}
	err := os.RemoveAll(b.scriptsDir)
	b.scriptsDir = ""
	return err
}

// callRunning calls a worker that must still hold the prepared case: it is
// not restarted, since a new worker would not know the case.
func (b *Backend) callRunning(ctx context.Context, method string, params, result any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.worker == nil || !b.worker.alive() {
		return fmt.Errorf("%s: %s: the python worker is not running (it died or was stopped; the next Prepare starts a new one)", b.config.Name, method)
	}
	return b.worker.call(ctx, method, params, result)
}

// ensureWorker returns the running worker, starting one if there is none
// or the last one died. It returns an *unavailableError once the machine
// is known to lack python3, torch or a module the backend imports.
func (b *Backend) ensureWorker(ctx context.Context) (*worker, error) {
	if b.worker != nil && b.worker.alive() {
		return b.worker, nil
	}
	if b.unavailable != "" {
		return nil, &unavailableError{b.unavailable}
	}
	if b.scriptsDir == "" {
		dir, err := writeScripts(b.config.Name, b.config.Scripts)
		if err != nil {
			return nil, err
		}
		b.scriptsDir = dir
	}
	w, err := startWorker(Interpreter(), b.scriptsDir, b.config.Module, b.config.Env, b.output())
	if errors.Is(err, errPythonNotFound) {
		b.unavailable = err.Error()
		return nil, &unavailableError{b.unavailable}
	}
	if err != nil {
		return nil, err
	}
	return b.greet(ctx, w)
}

// greet reads the new worker's hello and keeps the worker if it is ready.
func (b *Backend) greet(ctx context.Context, w *worker) (*worker, error) {
	h, err := w.readHello(ctx)
	switch {
	case err != nil:
		return nil, err
	case h.Unavailable != "":
		w.stop()
		b.unavailable = h.Unavailable
		return nil, &unavailableError{b.unavailable}
	case h.Protocol != protocolVersion:
		w.kill()
		return nil, fmt.Errorf("python worker speaks protocol %d, want %d (stale scripts?)", h.Protocol, protocolVersion)
	}
	b.worker = w
	return w, nil
}

func (b *Backend) output() io.Writer {
	if b.config.Output != nil {
		return b.config.Output
	}
	return os.Stderr
}
