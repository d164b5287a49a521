//go:build linux

package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/internal/testplugins/stray"
	"github.com/flashcore/bench/sdk"
)

// testHostEnv makes the test binary a host that starts the plugin it
// names, says "started" on stdout and waits to be killed.
const testHostEnv = "FLASHCORE_TEST_HOST"

func TestMain(m *testing.M) {
	if plugin := os.Getenv(testHostEnv); plugin != "" {
		os.Exit(runTestHost(plugin))
	}
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

func runTestHost(path string) int {
	if _, err := Start(context.Background(), Plugin{Name: nameOf(path), Path: path}, Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("started")
	for {
		time.Sleep(time.Hour)
	}
}

// ending is one way a plugin's life ends: start starts the plugin (with
// env) and returns what ends it.
type ending struct {
	name  string
	start func(t *testing.T, path string, env []string) (end func())
}

var endings = []ending{
	{"closed", func(t *testing.T, path string, env []string) func() {
		inst := startForTest(t, path, env)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := inst.Backend().Describe(ctx); err != nil {
			t.Errorf("Describe: %v", err)
		}
		return inst.Close
	}},
	{"killed after a call timed out", func(t *testing.T, path string, env []string) func() {
		inst := startForTest(t, path, append(env, stray.HangEnv+"=1"))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := inst.Backend().Run(ctx, sdk.RunRequest{CaseID: "c1"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run = %v, want the deadline", err)
		}
		return inst.Kill
	}},
	{"host SIGKILLed", func(t *testing.T, path string, env []string) func() {
		host := exec.Command(os.Args[0])
		host.Env = append(append(os.Environ(), env...), testHostEnv+"="+path)
		host.Stderr = os.Stderr
		stdout, err := host.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		kill := func() {
			host.Process.Kill()
			host.Wait()
		}
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
			kill()
			t.Fatalf("test host said %q, not started", line)
		}
		checkStraysRunning(t, env)
		return kill
	}},
}

// TestNoStraySurvives runs the plugins whose grandchildren escape (by
// setsid, and by double-forking into a process group of their own) to
// each ending, with the cgroup and with the subreaper sweep alone, and
// checks that no process of theirs, and nothing in the temporary
// directory, is left.
func TestNoStraySurvives(t *testing.T) {
	plugins := map[stray.Kind]string{
		stray.Setsid:     buildtest.Plugin(t, "test-setsid", "internal/testplugins/setsid"),
		stray.DoubleFork: buildtest.Plugin(t, "test-doublefork", "internal/testplugins/doublefork"),
	}
	for _, mode := range []string{"subreaper", "cgroup"} {
		for _, kind := range []stray.Kind{stray.Setsid, stray.DoubleFork} {
			for _, e := range endings {
				t.Run(fmt.Sprintf("%s/%s/%s", mode, kind, e.name), func(t *testing.T) {
					useMode(t, mode)
					tmp := shortTempDir(t)
					t.Setenv("TMPDIR", tmp)
					marker := stray.NewMarker()
					env := []string{stray.MarkerEnv + "=" + marker}
					start := time.Now()
					endWithin(t, 15*time.Second, marker, e.start(t, plugins[kind], env))
					waitForNoStrays(t, marker, 5*time.Second)
					t.Logf("ended and swept in %v", time.Since(start))
					if left, _ := os.ReadDir(tmp); len(left) != 0 {
						t.Errorf("left in the temporary directory: %v", names(left))
					}
				})
			}
		}
	}
}

// TestStraysEscapeAProcessGroupKill shows that the test plugins' strays
// are real: killing the plugin's process group, as the host once did,
// leaves them running.
func TestStraysEscapeAProcessGroupKill(t *testing.T) {
	for _, kind := range []stray.Kind{stray.Setsid, stray.DoubleFork} {
		t.Run(string(kind), func(t *testing.T) {
			path := buildtest.Plugin(t, "test-"+string(kind), "internal/testplugins/"+string(kind))
			marker := stray.NewMarker()
			cmd := exec.Command(path)
			cmd.Env = append(os.Environ(), stray.MarkerEnv+"="+marker, "TMPDIR="+t.TempDir())
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdout, _ := cmd.StdoutPipe() // the plugin serves once its stray runs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			bufio.NewReader(stdout).ReadString('\n')
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			survivors := stray.Sleepers(marker)
			for _, pid := range survivors {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if len(survivors) == 0 {
				t.Errorf("no stray survived the process group kill: the plugin does not escape")
			}
		})
	}
}

// TestCgroupKillEndsEveryMember starts processes that left their session
// inside a plugin cgroup and checks that removing the cgroup ends them.
func TestCgroupKillEndsEveryMember(t *testing.T) {
	dir := requireCgroup(t)
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var members []*exec.Cmd
	for range 3 {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: fd}
		if err := cmd.Start(); err != nil {
			removeCgroup(dir)
			t.Skipf("cannot start a process in a cgroup here: %v", err)
		}
		members = append(members, cmd)
	}
	if got := len(cgroupPids(dir)); got != len(members) {
		t.Errorf("cgroup lists %d processes, want %d", got, len(members))
	}
	if err := removeCgroup(dir); err != nil {
		t.Errorf("removeCgroup: %v", err)
	}
	for _, cmd := range members {
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("sleep %d: %v, want killed", cmd.Process.Pid, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s still exists: %v", dir, err)
	}
}

// TestPluginRunsInItsCgroup checks that, where cgroups can be used, the
// plugin's strays are in the plugin's cgroup, and in no such cgroup with
// FLASHCORE_CGROUP=off.
func TestPluginRunsInItsCgroup(t *testing.T) {
	path := buildtest.Plugin(t, "test-setsid", "internal/testplugins/setsid")
	for _, mode := range []string{"cgroup", "subreaper"} {
		t.Run(mode, func(t *testing.T) {
			useMode(t, mode)
			marker := stray.NewMarker()
			inst := startForTest(t, path, []string{stray.MarkerEnv + "=" + marker})
			defer inst.Close()
			sleepers := stray.Sleepers(marker)
			if len(sleepers) == 0 {
				t.Fatal("no stray running")
			}
			membership, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", sleepers[0]))
			if err != nil {
				t.Fatal(err)
			}
			inPluginCgroup := strings.Contains(string(membership), "/flashcore-"+nameOf(path)+"-")
			if inPluginCgroup != (mode == "cgroup") {
				t.Errorf("%s mode: the stray's cgroups are\n%s", mode, membership)
			}
		})
	}
}

// TestWrapperRunsUnderTheReaper checks that FLASHCORE_PLUGIN_WRAPPER still
// wraps the plugin, and that what the wrapped plugin starts is swept too.
func TestWrapperRunsUnderTheReaper(t *testing.T) {
	path := buildtest.Plugin(t, "test-setsid", "internal/testplugins/setsid")
	t.Setenv(WrapperEnv, "env FLASHCORE_TEST_WRAPPED=yes")
	marker := stray.NewMarker()
	inst := startForTest(t, path, []string{stray.MarkerEnv + "=" + marker})
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", stray.Sleepers(marker)[0]))
	if err != nil || !strings.Contains(string(environ), "\x00FLASHCORE_TEST_WRAPPED=yes\x00") {
		t.Errorf("the plugin did not run under the wrapper (%v)", err)
	}
	endWithin(t, 15*time.Second, marker, inst.Close)
	waitForNoStrays(t, marker, 5*time.Second)
}

// TestMissingPluginIsAStartError: the reaper cannot start the plugin, and
// says why on the stderr that becomes the reason.
func TestMissingPluginIsAStartError(t *testing.T) {
	tmp := shortTempDir(t)
	t.Setenv("TMPDIR", tmp)
	_, err := Start(context.Background(), Plugin{Name: "gone", Path: filepath.Join(tmp, "flashcore-backend-gone")}, Options{})
	se, ok := IsStartError(err)
	const want = "plugin exited during start-up: flashcore: start plugin: fork/exec "
	if !ok || !strings.HasPrefix(se.Reason, want) || !strings.HasSuffix(se.Reason, "no such file or directory") {
		t.Errorf("err = %v, want a StartError with a reason starting %q", err, want)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary directory: %v", names(left))
	}
}

// BenchmarkStartDirect and BenchmarkStartThroughTheReaper give what the
// reaper adds to a plugin's start (go test -bench Start ./core/host); a
// benchmark, not a test, since timings on a shared machine are noisy.
func BenchmarkStartDirect(b *testing.B) {
	path := buildtest.Plugin(b, "test-echo", "internal/testplugins/echo")
	for b.Loop() {
		client := plugin.NewClient(sdk.ClientConfig(exec.Command(path), nil, nil))
		if _, err := sdk.Dispense(client); err != nil {
			b.Fatal(err)
		}
		client.Kill()
	}
}

func BenchmarkStartThroughTheReaper(b *testing.B) {
	path := buildtest.Plugin(b, "test-echo", "internal/testplugins/echo")
	for b.Loop() {
		inst, err := Start(context.Background(), Plugin{Name: "test-echo", Path: path}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

func startForTest(t *testing.T, path string, env []string) *Instance {
	t.Helper()
	inst, err := Start(context.Background(), Plugin{Name: nameOf(path), Path: path}, Options{Env: env, StartTimeout: 20 * time.Second})
	if err != nil {
		se, _ := IsStartError(err)
		t.Fatalf("start %s: %v\nstderr: %s", path, err, se.StderrTail)
	}
	checkStraysRunning(t, env)
	return inst
}

// checkStraysRunning fails the test when env holds a marker but no stray
// carries it: the test would prove nothing.
func checkStraysRunning(t *testing.T, env []string) {
	t.Helper()
	for _, kv := range env {
		if marker, ok := strings.CutPrefix(kv, stray.MarkerEnv+"="); ok && len(stray.Sleepers(marker)) == 0 {
			t.Fatalf("the plugin started no stray")
		}
	}
}

// endWithin runs end, and fails the test if it has not returned within
// limit: a stray that holds the plugin's stderr keeps go-plugin waiting
// for ever. The strays are then killed so that end can return.
func endWithin(t *testing.T, limit time.Duration, marker string, end func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		end()
	}()
	select {
	case <-done:
		return
	case <-time.After(limit):
	}
	left := stray.Find(marker)
	t.Errorf("the host hung for %v ending the plugin; %d process(es) still running: %s", limit, len(left), stray.Describe(left))
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-done
}

func waitForNoStrays(t *testing.T, marker string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		left := stray.Find(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d process(es) survived: %s", len(left), stray.Describe(left))
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// useMode sets up the subreaper-only mode, or the cgroup mode where this
// machine allows it (and skips, saying why, where it does not).
func useMode(t *testing.T, mode string) {
	t.Helper()
	if mode == "subreaper" {
		t.Setenv(CgroupEnv, "off")
		return
	}
	removeCgroup(requireCgroup(t))
}

func requireCgroup(t *testing.T) string {
	t.Helper()
	dir, err := newPluginCgroup("probe")
	if err != nil {
		t.Skipf("no cgroup for plugins on this machine: %v", err)
	}
	return dir
}

// shortTempDir is a temporary directory with a short path: go-plugin's
// Unix socket goes in a directory made in it, and socket paths are limited
// to 107 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func names(entries []os.DirEntry) []string {
	var n []string
	for _, e := range entries {
		n = append(n, e.Name())
	}
	return n
}
