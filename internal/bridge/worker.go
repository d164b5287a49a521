package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flashcore/bench/internal/environ"
	"github.com/flashcore/bench/sdk"
)

// outputTailBytes is how much of the worker's output is kept for errors.
const outputTailBytes = 4 << 10

// exitGrace is how long a worker may take to exit once asked, or once its
// reply pipe has closed, before it is killed.
const exitGrace = 5 * time.Second

// worker is one running Python worker process.
type worker struct {
	cmd      *exec.Cmd
	requests *os.File // host end of the worker's fd 3
	replies  *os.File // host end of the worker's fd 4
	output   *tailBuffer
	exited   chan struct{} // closed once the process has been waited for
	waitErr  error         // set before exited closes
	killed   atomic.Bool
	lastID   uint64
	// described is the worker's answer to describe, once asked: the
	// variants and device its Prepare requests are checked against.
	described *sdk.Description
}

// WorkerWrapperEnv names a command prefix the Python worker is started
// under, e.g. FLASHCORE_WORKER_WRAPPER="ncu --nvtx --export report". It is
// FLASHCORE_PLUGIN_WRAPPER's twin for the bridges: a profiler cannot follow
// the plugin's exec of its worker (Go does not exec through libc), so it
// has to wrap the interpreter itself. The wrapper must pass on the
// worker's file descriptors 3 and 4 (its request and reply pipes).
const WorkerWrapperEnv = "FLASHCORE_WORKER_WRAPPER"

// UnderProfilerEnv, set to 1, tells the worker a profiler is watching it:
// it marks every call with an NVTX push/pop range (ncu.CallRange, inside
// the range "flashcore") and leaves out its CUPTI cross-check, since the
// profiler holds CUPTI.
const UnderProfilerEnv = sdk.UnderProfilerEnv

// TimingReferenceEnv, set to "cupti", has the worker time more calls after
// each Run's own samples, by CUPTI with each call told apart by
// correlation rather than by device order, and return them as the timing
// facts reference_ns and reference_kernels (or reference_error):
// flashcore verify-timing's reference for the bridges' figure.
const TimingReferenceEnv = sdk.TimingReferenceEnv

// errPythonNotFound marks an interpreter that could not be executed.
var errPythonNotFound = errors.New("python3 not found ($FLASHCORE_PYTHON or python3)")

// startWorker runs `python -u dir/worker_main.py module` with the request
// and reply pipes on fds 3 and 4. Its stdout and stderr go to output (and
// a tail buffer); it inherits the plugin's environment, with env added.
func startWorker(python, dir, module string, env []string, output io.Writer) (*worker, error) {
	requestsRead, requestsWrite, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repliesRead, repliesWrite, err := os.Pipe()
	if err != nil {
		closeAll(requestsRead, requestsWrite)
		return nil, err
	}
	w := &worker{requests: requestsWrite, replies: repliesRead, output: newTailBuffer(outputTailBytes), exited: make(chan struct{})}
	args := []string{python, "-u", filepath.Join(dir, "worker_main.py"), module}
	wrapper := strings.Fields(os.Getenv(WorkerWrapperEnv))
	args = append(wrapper, args...)
	cmd := exec.Command(args[0], args[1:]...)
	combined := io.MultiWriter(output, w.output)
	cmd.Stdout, cmd.Stderr = combined, combined
	cmd.ExtraFiles = []*os.File{requestsRead, repliesWrite} // fds 3 and 4
	if extra := append(bytecodeCache(os.Environ()), env...); len(extra) > 0 {
		cmd.Env = append(os.Environ(), extra...) // the last of a duplicated key wins
	}
	cmd.WaitDelay = time.Second
	isolate(cmd)
	err = cmd.Start()
	closeAll(requestsRead, repliesWrite) // the child holds its own copies
	if err != nil {
		closeAll(requestsWrite, repliesRead)
		if len(wrapper) > 0 {
			return nil, fmt.Errorf("start python worker under $%s (%s): %w", WorkerWrapperEnv, wrapper[0], err)
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", errPythonNotFound, err)
		}
		return nil, fmt.Errorf("start python worker: %w", err)
	}
	w.cmd = cmd
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// readHello waits for the worker's first frame.
func (w *worker) readHello(ctx context.Context) (hello, error) {
	r, err := w.roundTrip(ctx, nil, "start-up")
	if err != nil {
		return hello{}, err
	}
	if r.Hello == nil {
		w.kill()
		return hello{}, fmt.Errorf("python worker: first frame is not a hello")
	}
	return *r.Hello, nil
}

// call sends method with params and decodes the answer into result.
func (w *worker) call(ctx context.Context, method string, params, result any) error {
	w.lastID++
	id := w.lastID
	r, err := w.roundTrip(ctx, &request{ID: id, Method: method, Params: params}, method)
	if err != nil {
		return err
	}
	switch {
	case r.ID != id:
		w.kill()
		return fmt.Errorf("python worker answered request %d, want %d", r.ID, id)
	case r.Error != nil:
		return r.Error.asError()
	case result == nil:
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("%s: decode the worker's answer: %w", method, err)
	}
	return nil
}

// roundTrip writes req (if any) and reads one reply. When ctx ends first,
// the worker is killed and ctx.Err() returned.
func (w *worker) roundTrip(ctx context.Context, req *request, during string) (reply, error) {
	type answer struct {
		reply reply
		err   error
	}
	answered := make(chan answer, 1)
	go func() {
		var a answer
		if req != nil {
			a.err = writeFrame(w.requests, req)
		}
		if a.err == nil {
			a.err = readFrame(w.replies, &a.reply)
		}
		answered <- a
	}()
	select {
	case <-ctx.Done():
		w.kill()
		return reply{}, ctx.Err()
	case a := <-answered:
		if a.err != nil {
			return reply{}, w.failure(during, a.err)
		}
		return a.reply, nil
	}
}

// failure explains a failed exchange: for a closed pipe, the worker's exit
// status and the tail of what it printed (the traceback); otherwise the
// protocol error, after killing the worker.
func (w *worker) failure(during string, err error) error {
	if !pipeClosed(err) {
		w.kill()
		return fmt.Errorf("python worker broke the protocol during %s: %w", during, err)
	}
	select {
	case <-w.exited:
	case <-time.After(exitGrace):
	}
	w.kill()
	status := "still running; killed"
	select {
	case <-w.exited:
		status = "exit status 0"
		if w.waitErr != nil {
			status = w.waitErr.Error()
		}
	default:
	}
	return fmt.Errorf("python worker died during %s (%s):\n%s", during, status, w.output)
}

func pipeClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE)
}

// alive reports whether the worker can still answer.
func (w *worker) alive() bool {
	if w.killed.Load() {
		return false
	}
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill ends the worker and everything it started, at once.
func (w *worker) kill() {
	if w.killed.Swap(true) {
		return
	}
	killGroup(w.cmd.Process)
	closeAll(w.requests, w.replies)
}

// stop asks the worker to exit (end of its request stream) and kills it
// if it has not within exitGrace.
func (w *worker) stop() {
	_ = w.requests.Close()
	select {
	case <-w.exited:
	case <-time.After(exitGrace):
	}
	w.kill()
}

func (e *workerError) asError() error {
	if e.Kind == "oom" {
		return fmt.Errorf("out of memory: %s", e.Message)
	}
	// The host names the step ("prepare: ..."); saying it here as well
	// made reasons read "prepare: prepare: ...".
	return errors.New(e.Message)
}

// bytecodeCache is what the worker's environment needs so that Python
// keeps the bytecode of what it imports where PYTHONDONTWRITEBYTECODE
// forbids writing it beside the sources (environ.PythonBytecodeCache): in
// the plugin's own cache (FLASHCORE_CACHE_DIR, which the host gives each
// plugin and its wall lets it write). Every worker compiled torch's Python
// at every start without it, 5 to 6 s of each run's start on an H100
// machine.
func bytecodeCache(env []string) []string {
	return environ.PythonBytecodeCache(env, environ.Value(env, "FLASHCORE_CACHE_DIR"))
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	data []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	if over := len(b.data) - b.max; over > 0 {
		b.data = append(b.data[:0], b.data[over:]...)
	}
	return len(p), nil
}

// String is the kept text, trimmed, from a line start once it has wrapped.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := string(b.data)
	if len(b.data) >= b.max {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return strings.TrimSpace(text)
}
