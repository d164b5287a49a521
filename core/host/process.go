package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// reaperGrace is how long the host waits for a reaper that was asked to
// end (it kills descendants for up to sweepLimit) before it SIGKILLs the
// reaper's process group itself.
const reaperGrace = sweepLimit + 2*time.Second

// pluginProcess runs one plugin for go-plugin (as its runner.Runner): the
// host's own binary as the plugin's reaper, which starts the plugin. It owns
// the plugin's scratch directory and cgroup, and removes them once the
// reaper has exited.
type pluginProcess struct {
	plugin  Plugin
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  io.ReadCloser
	scratch string
	cgroup  string // "" when the plugin runs without one
	// walled is set when the plugin is to run confined (wall.go): the
	// machine offers Landlock, it is not turned off, and no wrapper runs
	// the plugin (a profiler needs the machine's temporary directories).
	walled bool
	// user is who the plugin runs as (users.go), chosen when its command
	// is made.
	user pluginUser

	mu      sync.Mutex
	started bool
	killed  bool
	frozen  bool
	release sync.Once
}

var _ runner.Runner = (*pluginProcess)(nil)

// newPluginProcess creates the plugin's scratch directory (in root, or
// the host's temporary directory when root is "") and, where the machine
// allows, its cgroup. Nothing runs until Start.
func newPluginProcess(p Plugin, root string) (*pluginProcess, error) {
	scratch, err := os.MkdirTemp(root, "flashcore-"+p.Name+"-")
	if err != nil {
		return nil, err
	}
	cgroup, _ := newPluginCgroup(p.Name) // without one the reaper's sweep is all
	return &pluginProcess{plugin: p, scratch: scratch, cgroup: cgroup, walled: CurrentIsolation().Landlock > 0}, nil
}

// command prepares the reaper's command; env is what go-plugin made for
// the plugin (host environment and handshake variables), extra is
// Options.Env, which loses to it, pin is Options.Pin, which wins, and sockets is go-plugin's directory for
// the plugin's Unix socket (the reaper removes it too, should the host die).
func (pp *pluginProcess) command(wrapper []string, profiled bool, extra, env, pin []string, sockets string) error {
	plugin := pluginCommand(pp.plugin.Path, pp.plugin.args(), wrapper).Args
	watched := len(wrapper) > 0 || profiled
	if watched {
		pp.walled = false
	}
	// Its own caches, walled or not: a plugin under ncu (the timing
	// audit's, verify-timing's) loads the kernels and the autotuner's
	// choices that it made in the run, so that ncu times the same kernel.
	extra = pp.caches(extra)
	// exec keeps the last of a duplicated key.
	all := append(append(append([]string(nil), extra...), env...), pin...)
	pp.user = pp.chooseUser(all, watched)
	caches := cacheDirs(all)
	if pp.user.own() {
		// Its workspace, its socket's directory and its caches become its
		// own, private to it.
		if err := giveTo(pp.user.UID, append([]string{pp.scratch, sockets}, caches...)...); err != nil {
			return fmt.Errorf("give the plugin's directories to its user %d: %w", pp.user.UID, err)
		}
	}
	var wall *wallRules
	if pp.walled {
		// The plugin's binary may be a link (a multicall binary's name):
		// canonical grants what it points to.
		wall = wallFor(privateDirs(), sharedDirs(filepath.Dir(pp.scratch)), append(caches, pp.scratch, sockets),
			append(pythonPlaces(all), pp.plugin.Path, filepath.Dir(pp.plugin.Path), linkedDir(pp.plugin.Path),
				fileDir(pp.plugin.PythonFile), fileDir(pp.plugin.CUDAFile)))
		wall.UID = pp.user.UID
	}
	cmd := exec.Command("/proc/self/exe", reaperArgs(pp.scratch, sockets, pp.cgroup, wall.encode(), pp.user.UID, plugin)...)
	cmd.Args[0] = "flashcore-reaper"
	cmd.Env = append(all, reaperEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.Stdin = os.Stdin
	cmd.SysProcAttr = reaperProcAttr()
	var err error
	if pp.stdout, err = cmd.StdoutPipe(); err != nil {
		return err
	}
	if pp.stderr, err = cmd.StderrPipe(); err != nil {
		return err
	}
	pp.cmd = cmd
	return nil
}

// runnerFunc is go-plugin's ClientConfig.RunnerFunc for this process.
func (pp *pluginProcess) runnerFunc(wrapper []string, profiled bool, extra, pin []string) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, cmd *exec.Cmd, sockets string) (runner.Runner, error) {
		if err := pp.command(wrapper, profiled, extra, cmd.Env, pin, sockets); err != nil {
			return nil, err
		}
		return pp, nil
	}
}

// Start starts the reaper, unless Kill came first.
func (pp *pluginProcess) Start(context.Context) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.killed {
		return errors.New("killed before it started")
	}
	if err := pp.cmd.Start(); err != nil {
		return err
	}
	pp.started = true
	return nil
}

// Wait waits for the reaper, which exits after the plugin and everything
// it started, then removes what the plugin was given.
func (pp *pluginProcess) Wait(context.Context) error {
	err := pp.cmd.Wait()
	pp.cleanUp()
	return err
}

// Kill ends the plugin and all it started, now: it kills the cgroup, and
// asks the reaper to sweep the rest and exit. If the reaper has not exited
// within reaperGrace, its process group is killed.
func (pp *pluginProcess) Kill(context.Context) error {
	pp.mu.Lock()
	pp.killed = true
	started := pp.started
	pp.mu.Unlock()
	if !started {
		return nil
	}
	if pp.cgroup != "" {
		killCgroup(pp.cgroup)
	}
	if err := pp.cmd.Process.Signal(syscall.SIGTERM); errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	time.AfterFunc(reaperGrace, pp.killGroup)
	return nil
}

// killGroup SIGKILLs the reaper's process group while the reaper has not
// been waited for (so its pid, the group's id, is still its own).
func (pp *pluginProcess) killGroup() {
	if pp.cmd.Process.Signal(syscall.Signal(0)) == nil {
		_ = syscall.Kill(-pp.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// cleanUp removes the cgroup and the scratch directory. The reaper does
// the same when it exits; this covers a reaper that could not.
func (pp *pluginProcess) cleanUp() {
	pp.release.Do(func() {
		if pp.cgroup != "" {
			_ = removeCgroup(pp.cgroup)
		}
		_ = os.RemoveAll(pp.scratch)
	})
}

func (pp *pluginProcess) Diagnose(context.Context) string { return "" }
func (pp *pluginProcess) Stdout() io.ReadCloser           { return pp.stdout }
func (pp *pluginProcess) Stderr() io.ReadCloser           { return pp.stderr }
func (pp *pluginProcess) Name() string                    { return pp.plugin.Path }

// ID is the reaper's pid once started; go-plugin takes "" as not started.
func (pp *pluginProcess) ID() string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if !pp.started {
		return ""
	}
	return strconv.Itoa(pp.cmd.Process.Pid)
}

func (pp *pluginProcess) PluginToHost(network, address string) (string, string, error) {
	return network, address, nil
}

func (pp *pluginProcess) HostToPlugin(network, address string) (string, string, error) {
	return network, address, nil
}

// reaperArgs is the reaper's command line after argv[0]; uid 0 starts the
// plugin as the host's user.
func reaperArgs(scratch, sockets, cgroup, wall string, uid int, command []string) []string {
	return append([]string{"-scratch", scratch, "-sockets", sockets, "-cgroup", cgroup, "-wall", wall, "-uid", strconv.Itoa(uid), "--"}, command...)
}

// reaperEnv marks a process as a plugin's reaper; its value is the host's
// pid, which the reaper watches.
const reaperEnv = "FLASHCORE_REAPER"

// sweepLimit bounds how long the reaper keeps killing descendants that are
// slow to die.
const sweepLimit = 5 * time.Second
