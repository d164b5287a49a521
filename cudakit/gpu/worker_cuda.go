//go:build cuda

package gpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"gorgonia.org/cu"
)

// Worker owns one CUDA context and the OS thread it is current on. The
// driver's current context is per OS thread, so all CUDA work of a Worker
// runs on its goroutine, which is locked to that thread for its whole life:
// pass the work to Do.
type Worker struct {
	info DeviceInfo
	work chan func()
	done chan struct{}

	mu       sync.RWMutex
	closed   bool
	closeErr error
}

// NewWorker creates a context on device ordinal, on a new locked thread.
// The context spins while it waits for the GPU (CU_CTX_SCHED_SPIN), which
// gives the lowest and steadiest host-side latency for call-time samples.
func NewWorker(ordinal int) (*Worker, error) {
	info, err := QueryDevice(ordinal)
	if err != nil {
		return nil, err
	}
	w := &Worker{info: info, work: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go w.run(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// run never unlocks its thread: when it returns, the runtime ends the
// thread, so no other goroutine inherits the context.
func (w *Worker) run(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	defer close(w.done)
	ctx, err := cu.Device(ordinal).MakeContext(cu.SchedSpin)
	if err != nil {
		ready <- wrap(fmt.Sprintf("create CUDA context on device %d", ordinal), err)
		return
	}
	ready <- nil
	for fn := range w.work {
		fn()
	}
	w.closeErr = wrap("destroy CUDA context", ctx.Destroy())
}

// Device describes the worker's GPU.
func (w *Worker) Device() DeviceInfo { return w.info }

// Do runs fn on the worker's thread, with the worker's context current, and
// returns its error. A panic in fn is returned as an error. Calls are
// serialised.
func (w *Worker) Do(fn func() error) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrWorkerClosed
	}
	errc := make(chan error, 1)
	w.work <- func() { errc <- callSafely(fn) }
	return <-errc
}

func callSafely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic on the CUDA worker: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

// Close destroys the context and ends the thread. Resources allocated in
// the context are freed with it.
func (w *Worker) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.work)
	w.mu.Unlock()
	<-w.done
	return w.closeErr
}
