// Package stray is for test plugins that leave processes and files behind,
// and for the tests that look for them. Start at Leave.
//
// A plugin calls Leave before sdk.Serve. Leave re-executes the plugin's own
// binary in a role (chosen by roleEnv) to build the escape:
//
//	Setsid:     plugin -> child -> grandchild that calls setsid; the child
//	            stays, the grandchild sleeps forever
//	DoubleFork: plugin -> child -> grandchild in a process group of its own;
//	            the child exits at once, so the grandchild is orphaned
//
// The grandchild ignores SIGTERM, SIGINT and SIGHUP and keeps the plugin's
// stderr open, as a stray compiler or daemon does. Leave also writes a
// directory into the plugin's temporary directory, as a bridge's scripts.
//
// Every process carries MarkerEnv from the test's environment; Find lists
// the living processes that do. Without MarkerEnv, Leave does nothing, so
// these plugins never leave processes no test would look for.
package stray

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MarkerEnv names the variable every stray process carries; a test sets it
// to a value of its own and looks for that value with Find.
const MarkerEnv = "FLASHCORE_TEST_STRAY_MARKER"

// HangEnv, set to 1, makes the plugins' Run block forever (see Hang).
const HangEnv = "FLASHCORE_TEST_STRAY_HANG"

// roleEnv tells a re-executed plugin binary which stray process it is.
const roleEnv = "FLASHCORE_TEST_STRAY_ROLE"

// Kind is the way the stray escapes its plugin.
type Kind string

const (
	Setsid     Kind = "setsid"
	DoubleFork Kind = "doublefork"
)

const (
	roleChild   = "child"
	roleSleeper = "sleeper"
)

// Leave starts the stray of kind and returns once it runs. In the stray's
// own processes it does not return.
func Leave(kind Kind) {
	switch os.Getenv(roleEnv) {
	case roleChild:
		os.Exit(child(kind))
	case roleSleeper:
		sayReady()
		sleepForever()
	}
	if os.Getenv(MarkerEnv) == "" {
		return
	}
	if _, err := os.MkdirTemp("", "flashcore-stray-scratch-"); err != nil {
		fail(err)
	}
	if err := startChild(kind); err != nil {
		fail(err)
	}
}

// Hang blocks forever when HangEnv is 1: the plugins' BeforeRun.
func Hang() {
	if os.Getenv(HangEnv) == "1" {
		sleepForever()
	}
}

// startChild starts the child and waits for its word that the grandchild
// runs.
func startChild(kind Kind) error {
	ready, readyWrite, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ready.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), roleEnv+"="+roleChild)
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{readyWrite} // fd 3
	err = cmd.Start()
	readyWrite.Close()
	if err != nil {
		return err
	}
	if line, _ := bufio.NewReader(ready).ReadString('\n'); line != "ready\n" {
		return fmt.Errorf("stray child: no grandchild (%q)", line)
	}
	if kind == DoubleFork {
		return cmd.Wait() // the child exits at once; do not leave a zombie
	}
	return nil
}

// child starts the grandchild, handing it fd 3 to say that it runs, and
// then either stays (Setsid) or exits so the grandchild is orphaned
// (DoubleFork).
func child(kind Kind) int {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), roleEnv+"="+roleSleeper)
	cmd.Stderr = os.Stderr
	ready := os.NewFile(3, "ready")
	cmd.ExtraFiles = []*os.File{ready} // the grandchild says it runs
	switch kind {
	case Setsid:
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	case DoubleFork:
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	err := cmd.Start()
	ready.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stray child:", err)
		return 1
	}
	if kind == DoubleFork {
		return 0
	}
	sleepForever()
	return 0
}

// sayReady tells the plugin, on fd 3, that the grandchild runs as itself.
// The grandchild says it, not the child: the child's exec of it returns
// before the kernel has put the new environment in place, so a test that
// looked for the marker at once could miss it.
func sayReady() {
	ready := os.NewFile(3, "ready")
	fmt.Fprintln(ready, "ready")
	ready.Close()
}

// sleepForever sleeps, deaf to the polite signals: only SIGKILL ends it.
func sleepForever() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for {
		time.Sleep(time.Hour)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "stray:", err)
	os.Exit(1)
}

// Find returns the pids of living processes (zombies are dead) whose
// environment holds MarkerEnv=marker, leaving out the calling process.
func Find(marker string) []int { return find(marker, "") }

// Sleepers returns those of Find that are strays' grandchildren, the
// processes that escaped.
func Sleepers(marker string) []int { return find(marker, roleSleeper) }

func find(marker, role string) []int {
	want := [][]byte{[]byte(MarkerEnv + "=" + marker)}
	if role != "" {
		want = append(want, []byte(roleEnv+"="+role))
	}
	entries, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasEntries(environ, want) || zombie(e.Name()) {
			continue
		}
		found = append(found, pid)
	}
	return found
}

func hasEntries(environ []byte, entries [][]byte) bool {
	for _, entry := range entries {
		if !hasEntry(environ, entry) {
			return false
		}
	}
	return true
}

func hasEntry(environ, entry []byte) bool {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

func zombie(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true // gone
	}
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	return len(fields) == 0 || fields[0] == "Z" || fields[0] == "X"
}

// Describe names the processes of pids for a test's failure message:
// "pid (command) state parent-pid" each.
func Describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		fields := strings.Fields(string(stat))
		parts = append(parts, strings.Join(fields[:min(4, len(fields))], " "))
	}
	return strings.Join(parts, "; ")
}

// NewMarker is a fresh random marker value, so that a test finds only the
// strays it started.
func NewMarker() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
