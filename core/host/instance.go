package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/sdk"
)

// stderrTailBytes is how much of a plugin's stderr is kept for reasons.
const stderrTailBytes = 8 << 10

// Options tune how plugins are started.
type Options struct {
	// Env is added to the plugin's environment (KEY=VALUE). The host's own
	// environment wins over it, as go-plugin merges them that way.
	Env []string
	// Pin is added to the plugin's environment after the host's own, so it
	// wins over it: CUDA_VISIBLE_DEVICES, which pins a plugin and every
	// process it starts to one GPU, even when the host has it set.
	Pin []string
	// StartTimeout bounds the handshake; 0 means 60 s.
	StartTimeout time.Duration
	// Logger receives go-plugin's own logging; nil discards it.
	Logger hclog.Logger
	// Wrapper is a command prefix to start the plugin under (a profiler),
	// as separate arguments; nil means $FLASHCORE_PLUGIN_WRAPPER's.
	Wrapper []string
	// Profiled says that a profiler runs inside the plugin, started by it
	// (the Python bridges start their worker under one named in Env), and
	// writes its report where the host asked: the plugin then runs without
	// the walls, as a plugin under Wrapper does, since the walls would keep
	// the profiler from the report's folder.
	Profiled bool
	// ScratchRoot is where the plugin's scratch directory, its workspace,
	// is made; "" means the host's temporary directory.
	ScratchRoot string
}

// Instance is one running plugin process.
type Instance struct {
	Plugin  Plugin
	client  *plugin.Client
	process *pluginProcess
	backend sdk.Backend
	stderr  *stderrLog
}

// StartError is a plugin that could not be started. Reason is a short
// sentence for tables and `flashcore list`; Unavailable is true when the
// cause is the machine (no GPU, no driver) rather than a broken plugin.
type StartError struct {
	Plugin      string
	Reason      string
	Unavailable bool
	StderrTail  string
	Err         error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %s", e.Plugin, e.Reason) }
func (e *StartError) Unwrap() error { return e.Err }

// Start launches p and connects to it. The plugin runs under a reaper
// (see reaper.go), in a scratch directory that is its TMPDIR and, where the
// machine allows, a cgroup of its own, so that nothing it starts outlives
// it: not when it exits, is killed, or the host itself dies.
func Start(ctx context.Context, p Plugin, opts Options) (*Instance, error) {
	wrapper := opts.Wrapper
	if wrapper == nil {
		wrapper = strings.Fields(os.Getenv(WrapperEnv))
	}
	process, err := newPluginProcess(p, opts.ScratchRoot)
	if err != nil {
		return nil, &StartError{Plugin: p.Name, Reason: "create its scratch directory: " + err.Error(), Err: err}
	}
	stderr := newStderrLog()
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	config := sdk.ClientConfig(nil, stderr, logger)
	config.RunnerFunc = process.runnerFunc(wrapper, opts.Profiled, opts.Env, opts.Pin)
	if opts.StartTimeout > 0 {
		config.StartTimeout = opts.StartTimeout
	}
	inst := &Instance{Plugin: p, client: plugin.NewClient(config), process: process, stderr: stderr}
	started := make(chan error, 1)
	go func() {
		backend, err := sdk.Dispense(inst.client)
		inst.backend = backend
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			inst.Kill()
			return nil, classifyStart(p.Name, err, stderr.String())
		}
		return inst, nil
	case <-ctx.Done():
		inst.Kill()
		<-started
		return nil, &StartError{Plugin: p.Name, Reason: "interrupted while starting", Err: ctx.Err()}
	}
}

// WrapperEnv names a command prefix that every plugin is started under, e.g.
// FLASHCORE_PLUGIN_WRAPPER="compute-sanitizer --log-file san.%p.txt". Tools
// that follow child processes through libc's exec cannot follow Go's, so
// profilers and sanitizers must wrap the plugin itself. The wrapper must
// leave the plugin's stdout alone (send its own output to a log file): that
// is where the go-plugin handshake travels.
const WrapperEnv = sdk.PluginWrapperEnv

// pluginCommand is the command that starts the plugin at path with args,
// under the wrapper prefix when one is given.
func pluginCommand(path string, args, prefix []string) *exec.Cmd {
	if len(prefix) == 0 {
		return exec.Command(path, args...)
	}
	return exec.Command(prefix[0], append(append(prefix[1:], path), args...)...)
}

// Backend is the plugin's interface. Calls on it go to the plugin process.
func (i *Instance) Backend() sdk.Backend { return i.backend }

// Workspace is the plugin's own directory, its TMPDIR: the only place a
// confined plugin may write besides its caches, so the host puts the
// plugin's row workspaces in it. It goes when the plugin does.
func (i *Instance) Workspace() string { return i.process.scratch }

// StderrTail is the last few KB the plugin wrote to stderr.
func (i *Instance) StderrTail() string { return i.stderr.String() }

// StderrWritten is how many bytes the plugin has written to stderr so far:
// a marker to read what one call wrote with StderrSince.
func (i *Instance) StderrWritten() int64 { return i.stderr.Written() }

// StderrSince is what the plugin wrote to stderr from marker on (0: all of
// it since it started), whole up to 64 MiB. It is kept until the plugin is
// killed or closed.
func (i *Instance) StderrSince(marker int64) string { return i.stderr.Since(marker) }

// Exited reports whether the plugin process has ended.
func (i *Instance) Exited() bool { return i.client.Exited() }

// Kill ends the plugin and everything it started, at once: a plugin that
// hangs may never answer a graceful shutdown. Then it lets go-plugin clean
// up its side.
func (i *Instance) Kill() {
	_ = i.process.Kill(context.Background())
	i.client.Kill()
	i.process.cleanUp()
	i.stderr.remove()
}

// Close asks the plugin to exit gracefully (so it can release its device
// or worker); go-plugin kills it (through Kill's path) if it has not
// within 2 s. Either way its reaper leaves nothing it started behind.
func (i *Instance) Close() {
	i.client.Kill()
	i.process.cleanUp()
	i.stderr.remove()
}

// classifyStart turns go-plugin's start errors into reasons a user can act
// on. The CUDA cases matter most: gorgonia.org/cu's init prints its error to
// stdout and exits, which go-plugin reports as an unrecognised handshake
// line; and a binary linked to libcuda fails in the loader where there is
// no driver.
func classifyStart(name string, err error, stderr string) *StartError {
	msg := untrusted.Text(err.Error())
	stderr = untrusted.Text(stderr)
	both := msg + "\n" + stderr
	se := &StartError{Plugin: name, StderrTail: stderr, Err: err}
	switch {
	case strings.Contains(stderr, driverShimMissing):
		// The CUDA plugins open libcuda.so.1 at run time (docs/cuda.md);
		// their driver shim says this once when it is not there.
		se.Reason, se.Unavailable = "no NVIDIA driver"+driverDetail(stderr), true
	case containsAny(both, "NoDevice", "no CUDA-capable device", "CUDA_ERROR_NO_DEVICE"):
		se.Reason, se.Unavailable = "no CUDA device", true
	case containsAny(both, "libcuda.so", "CUDA_ERROR_NOT_INITIALIZED", "InvalidDevice", "NotInitialized", "CUDA driver version is insufficient"):
		se.Reason, se.Unavailable = "no usable CUDA driver: "+firstLine(stderrOr(stderr, msg)), true
	case strings.Contains(msg, "Incompatible API version"), strings.Contains(msg, "incompatible core API version"):
		se.Reason = "plugin speaks another protocol version; rebuild it against this flashcore"
	case strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		se.Reason = "plugin exited during start-up: " + firstLine(stderrOr(stderr, "it said nothing"))
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		se.Reason = "plugin wrote to stdout before the handshake: " + strings.TrimSpace(strings.TrimPrefix(firstLine(msg), "Unrecognized remote plugin message:"))
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		se.Reason = "plugin did not complete the handshake in time"
	case strings.Contains(msg, "plugin exited before we could connect"):
		se.Reason = "plugin exited during start-up: " + firstLine(stderrOr(stderr, msg))
	default:
		se.Reason = firstLine(msg)
	}
	return se
}

// driverShimMissing starts the line the CUDA plugins' driver shim
// (scripts/cuda_toolchain.py) writes to stderr when libcuda.so.1 cannot be
// opened: "flashcore: no NVIDIA driver (WHY)".
const driverShimMissing = "flashcore: no NVIDIA driver"

// driverDetail is the shim's " (WHY)", or nothing.
func driverDetail(stderr string) string {
	i := strings.Index(stderr, driverShimMissing)
	rest, _, _ := strings.Cut(stderr[i+len(driverShimMissing):], "\n")
	if strings.HasPrefix(rest, " (") {
		return strings.TrimRight(rest, " \r")
	}
	return ""
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func stderrOr(stderr, fallback string) string {
	if stderr != "" {
		return lastLine(stderr)
	}
	return fallback
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// IsStartError reports whether err is a StartError and returns it.
func IsStartError(err error) (*StartError, bool) {
	var se *StartError
	ok := errors.As(err, &se)
	return se, ok
}

// Freeze stops every process of the plugin, where it has a cgroup and
// the walls are on, while other backends are measured: an idle plugin
// then takes no CPU from them (and what it would take is counted,
// CPUTime, where it cannot be frozen).
func (i *Instance) Freeze() { i.setFrozen(true) }

// Thaw lets a frozen plugin run again; it must be thawed before any call.
func (i *Instance) Thaw() { i.setFrozen(false) }

func (i *Instance) setFrozen(frozen bool) {
	if i.process.cgroup == "" || !CurrentIsolation().Cgroup {
		return
	}
	i.process.mu.Lock()
	defer i.process.mu.Unlock()
	if i.process.frozen != frozen && setFrozen(i.process.cgroup, frozen) == nil {
		i.process.frozen = frozen
	}
}

// CPUTime is the CPU time the plugin and all it started have used so far,
// from its cgroup; ok is false where it has none.
func (i *Instance) CPUTime() (time.Duration, bool) {
	if i.process.cgroup == "" {
		return 0, false
	}
	d, err := cpuUsage(i.process.cgroup)
	return d, err == nil
}
