//go:build linux

package host

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The wall is the last step between the reaper and the plugin: the host's
// own binary, run again with wallEnv set, which confines itself with
// Landlock and then becomes the plugin (execve keeps the confinement, and
// every process the plugin starts inherits it). The reaper itself stays
// unconfined, so it can still empty the plugin's cgroup and remove its
// files.

func init() {
	if rules := os.Getenv(wallEnv); rules != "" {
		os.Exit(wallMain(rules, os.Args[1:]))
	}
}

// wallMain confines this process by rules and executes command[0] with
// the arguments command[1:] (its argv[0] first); it returns only when it
// could not.
func wallMain(rules string, command []string) int {
	var w wallRules
	if err := json.Unmarshal([]byte(rules), &w); err != nil || len(command) < 2 {
		fmt.Fprintf(os.Stderr, "flashcore wall: bad rules or no command (it is started by flashcore, not by hand)\n")
		return 2
	}
	// Landlock confines the calling thread; execve from that same thread
	// carries it into the plugin.
	runtime.LockOSThread()
	if err := w.confine(); err != nil {
		fmt.Fprintf(os.Stderr, "flashcore wall: %v\n", err)
		return 126
	}
	if w.UID > 0 {
		if err := becomeUser(w.UID); err != nil {
			fmt.Fprintf(os.Stderr, "flashcore wall: %v\n", err)
			return 126
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, wallEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(command[0], command[1:], env)
	// Said as the reaper says it when it starts a plugin itself.
	fmt.Fprintf(os.Stderr, "flashcore: start plugin: %v\n", &os.PathError{Op: "fork/exec", Path: command[0], Err: err})
	return 127
}

// becomeUser gives up root for uid, with the gid of the same number and
// no supplementary groups, on the calling thread: the one that executes
// the plugin (execve runs with that thread's credentials, and ends the
// others). The raw system calls change this thread alone, as the kernel's
// do; there is nothing to undo should one fail, since the wall then exits.
func becomeUser(uid int) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); errno != 0 {
		return fmt.Errorf("setgroups: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(uid), uintptr(uid), uintptr(uid)); errno != 0 {
		return fmt.Errorf("setresgid(%d): %w", uid, errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); errno != 0 {
		return fmt.Errorf("setresuid(%d): %w", uid, errno)
	}
	return nil
}

// Landlock's file-system rights (linux/landlock.h), by the ABI version
// that brought them.
const (
	llExecute    = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWriteFile  = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llReadFile   = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir    = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llAllABI1    = 1<<13 - 1                        // execute … make_sym
	llRefer      = unix.LANDLOCK_ACCESS_FS_REFER    // ABI 2
	llTruncate   = unix.LANDLOCK_ACCESS_FS_TRUNCATE // ABI 3
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate

	// Scopes (ABI 6): signals and abstract Unix sockets stay inside the
	// plugin's own domain.
	llScopeAbstractUnix = 1
	llScopeSignal       = 2
)

// landlockABI is the Landlock ABI version the kernel offers; 0 when it
// offers none (not built in, not enabled at boot, or too old a kernel).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledRights are the rights this ABI can deny. IOCTL_DEV (ABI 5) is
// left out on purpose: a GPU is driven by ioctls on its device files.
func handledRights(abi int) uint64 {
	rights := uint64(llAllABI1)
	if abi >= 2 {
		rights |= llRefer
	}
	if abi >= 3 {
		rights |= llTruncate
	}
	return rights
}

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field (ABI
// 6); the kernel takes a shorter or longer struct as long as what it does
// not know is zero.
type rulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

type pathBeneathAttr struct {
	allowed  uint64
	parentFD int32
}

// confine applies the rules to the calling thread, for good.
func (w wallRules) confine() error {
	abi := landlockABI()
	if abi == 0 {
		return fmt.Errorf("landlock is not available")
	}
	handled := handledRights(abi)
	attr := rulesetAttr{handledFS: handled}
	if abi >= 6 {
		attr.scoped = llScopeAbstractUnix | llScopeSignal
	}
	size := unsafe.Sizeof(attr)
	if abi < 6 {
		size = 16
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	read := uint64(llExecute | llReadFile | llReadDir)
	for _, g := range []struct {
		paths  []string
		rights uint64
	}{{w.Read, read}, {w.Write, handled}, {w.Devices, llReadFile | llWriteFile | llTruncate}} {
		for _, path := range g.paths {
			if err := allow(ruleset, path, g.rights&handled); err != nil {
				return err
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// allow adds a rule that grants rights beneath path (a file gets only the
// rights a file can have). A path that is gone is skipped: the rules are
// made before the plugin starts, and some (a device) may come and go.
func allow(ruleset int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= llFileRights
	}
	attr := pathBeneathAttr{allowed: rights, parentFD: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
	}
	return nil
}
