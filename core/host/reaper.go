//go:build linux

package host

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The reaper is a small process between the host and each plugin. The host
// starts it by re-executing its own binary with reaperEnv set (the "reexec"
// pattern), so it works the same from flashcore and from a test binary; the
// init below turns that process into the reaper before main runs.
//
// The reaper makes itself the child subreaper of everything the plugin
// starts, so a grandchild that calls setsid or double-forks is re-parented
// to it rather than to init, and stays findable as its descendant. When the
// plugin exits, when the host asks (SIGTERM), or when the host dies
// (parent-death signal, and a check of getppid), it kills every descendant,
// empties and removes the plugin's cgroup and scratch directory, and exits
// with the plugin's status.

// parentPoll is how often the reaper checks that the host is alive, in case
// the parent-death signal was lost (it follows the host's thread, not its
// process).
const parentPoll = 100 * time.Millisecond

func init() {
	if hostPID := os.Getenv(reaperEnv); hostPID != "" {
		os.Exit(reaperMain(hostPID, os.Args[1:]))
	}
}

// reaperConfig is what the host tells its reaper, on the command line.
type reaperConfig struct {
	hostPID int
	scratch string   // the plugin's TMPDIR, removed at the end
	sockets string   // go-plugin's socket directory, removed at the end
	cgroup  string   // the plugin's cgroup, or "" to use none
	wall    string   // the plugin's wall rules (wall.go), or "" to start it unconfined
	uid     int      // the plugin's own user (users.go), or 0 for the host's
	command []string // the plugin (under its wrapper, if any)
}

func parseReaperArgs(hostPID string, args []string) (reaperConfig, error) {
	var c reaperConfig
	var err error
	if c.hostPID, err = strconv.Atoi(hostPID); err != nil || c.hostPID <= 1 {
		return c, fmt.Errorf("%s=%q is not a host pid", reaperEnv, hostPID)
	}
	flags := flag.NewFlagSet("reaper", flag.ContinueOnError)
	flags.SetOutput(new(strings.Builder))
	flags.StringVar(&c.scratch, "scratch", "", "the plugin's scratch directory")
	flags.StringVar(&c.sockets, "sockets", "", "go-plugin's socket directory")
	flags.StringVar(&c.cgroup, "cgroup", "", "the plugin's cgroup directory")
	flags.StringVar(&c.wall, "wall", "", "the plugin's wall rules")
	flags.IntVar(&c.uid, "uid", 0, "the plugin's own uid, or 0")
	if err := flags.Parse(args); err != nil {
		return c, err
	}
	if c.command = flags.Args(); len(c.command) == 0 {
		return c, errors.New("no plugin command")
	}
	return c, nil
}

// reaperMain runs the reaper and returns its exit status: the plugin's.
func reaperMain(hostPID string, args []string) int {
	c, err := parseReaperArgs(hostPID, args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flashcore reaper: %v (it is started by flashcore, not by hand)\n", err)
		return 2
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer c.cleanUp()
	if err := setChildSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "flashcore reaper: %v\n", err)
		return 1
	}
	if os.Getppid() != c.hostPID {
		return 1 // the host died before the plugin could start
	}
	plugin, err := c.startPlugin()
	if err != nil {
		fmt.Fprintf(os.Stderr, "flashcore: start plugin: %v\n", err)
		return 127
	}
	exited := make(chan syscall.WaitStatus, 1)
	go reapChildren(plugin, exited)
	status, ok := c.watch(exited, stop)
	if !ok {
		status = 128 + int(syscall.SIGKILL) // the deferred sweep kills the plugin
	}
	return status
}

// watch waits for the plugin to exit, the host to ask for the end or the
// host to die. It returns the plugin's status when the plugin exited; the
// caller's deferred cleanUp then kills whatever it left.
func (c reaperConfig) watch(exited <-chan syscall.WaitStatus, stop <-chan os.Signal) (int, bool) {
	poll := time.NewTicker(parentPoll)
	defer poll.Stop()
	for {
		select {
		case status := <-exited:
			return exitStatus(status), true
		case <-stop:
			return 0, false
		case <-poll.C:
			if os.Getppid() != c.hostPID {
				return 0, false
			}
		}
	}
}

// cleanUp kills every descendant and the plugin's cgroup, and removes the
// cgroup, the scratch directory and go-plugin's socket directory.
func (c reaperConfig) cleanUp() {
	sweepDescendants()
	if c.cgroup != "" {
		_ = removeCgroup(c.cgroup)
	}
	for _, dir := range []string{c.scratch, c.sockets} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// startPlugin starts the plugin with the reaper's stdio (the go-plugin
// handshake travels on stdout), TMPDIR set to the scratch directory, inside
// the cgroup when one is given and usable, behind its wall when it has
// one, as its own user when it has one, and killed if the reaper dies.
func (c reaperConfig) startPlugin() (int, error) {
	path := c.command[0]
	if !strings.Contains(path, "/") { // a wrapper, from PATH
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return 0, err
		}
	}
	argv := c.command
	env := pluginEnv(os.Environ(), c.scratch, c.uid)
	if c.wall != "" {
		// The host's binary confines itself and then executes the plugin.
		argv = append([]string{"flashcore-wall", path}, c.command...)
		path = "/proc/self/exe"
		env = append(env, wallEnv+"="+c.wall)
	}
	sys := syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if c.uid > 0 && c.wall == "" {
		// Behind a wall, the wall becomes the plugin's user once confined.
		sys.Credential = &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.uid), Groups: []uint32{}}
	}
	attr := &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &sys,
	}
	if c.cgroup != "" {
		if fd, err := syscall.Open(c.cgroup, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
			defer syscall.Close(fd)
			inCgroup := *attr
			withFD := sys
			withFD.UseCgroupFD, withFD.CgroupFD = true, fd
			inCgroup.Sys = &withFD
			if p, err := os.StartProcess(path, argv, &inCgroup); err == nil {
				return p.Pid, nil
			}
		}
		// No usable cgroup (an old kernel, no permission): the sweep alone.
	}
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return 0, err
	}
	return p.Pid, nil
}

// pluginEnv is the reaper's environment for the plugin: without the
// reaper's marker, with TMPDIR in the scratch directory, so that what the
// plugin and its children leave in temporary files goes with it, and, for
// a plugin with a uid of its own, USER and LOGNAME naming it
// (pluginUserName).
func pluginEnv(environ []string, scratch string, uid int) []string {
	env := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		if key == reaperEnv || (key == "TMPDIR" && scratch != "") || (uid > 0 && (key == "USER" || key == "LOGNAME")) {
			continue
		}
		env = append(env, kv)
	}
	if scratch != "" {
		env = append(env, "TMPDIR="+scratch)
	}
	if uid > 0 {
		env = append(env, "USER="+pluginUserName(uid), "LOGNAME="+pluginUserName(uid))
	}
	return env
}

// pluginUserName is the name a plugin's own uid goes by in its
// environment. The uid has no entry in the passwd database, so Python's
// getpass.getuser(), which torch.compile asks, would raise KeyError
// without it (seen on the H100); it reads LOGNAME and USER first.
func pluginUserName(uid int) string { return "flashcore-" + strconv.Itoa(uid) }

// reapChildren waits for every child of the reaper, the plugin and the
// orphans re-parented to it, so none stays a zombie, and reports the
// plugin's status.
func reapChildren(plugin int, exited chan<- syscall.WaitStatus) {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			time.Sleep(5 * time.Millisecond) // no child now; orphans may come
		case pid == plugin:
			exited <- status
		}
	}
}

func exitStatus(status syscall.WaitStatus) int {
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

func setChildSubreaper() error {
	const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, <linux/prctl.h>
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// sweepDescendants SIGKILLs every living descendant of this process until
// none is left, or sweepLimit has passed.
func sweepDescendants() {
	deadline := time.Now().Add(sweepLimit)
	for {
		pids, err := descendants(os.Getpid())
		if err != nil || len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// descendants lists the living (not zombie) descendants of root, from
// /proc.
func descendants(root int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	alive := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it has gone since the listing
		}
		ppid, state, ok := parseStat(string(stat))
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		alive[pid] = state != "Z" && state != "X"
	}
	var found []int
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = append(queue[1:], children[pid]...)
		if alive[pid] {
			found = append(found, pid)
		}
	}
	return found, nil
}

// parseStat reads the parent pid and state from a /proc/<pid>/stat line,
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
func parseStat(stat string) (ppid int, state string, ok bool) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, "", false
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}

// reaperProcAttr starts the reaper in its own process group (a terminal's
// Ctrl-C is the host's, which then ends the plugins in order), with
// SIGTERM on the host's death so that the reaper cleans up.
func reaperProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
