package host

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupEnv turns the per-plugin cgroup off when set to "off". The
// reaper's subreaper sweep alone still leaves no survivor, unless the
// reaper itself is SIGKILLed: only a cgroup catches what it leaves then.
const CgroupEnv = "FLASHCORE_CGROUP"

// cgroupKillLimit bounds how long a cgroup is killed and waited for before
// it is given up on (a process in uninterruptible sleep, in a GPU driver
// call, may take a while to die).
const cgroupKillLimit = 5 * time.Second

// newPluginCgroup creates a cgroup v2 group for one plugin, under the
// cgroup this process is in. It returns the error that says why not where
// the machine has no writable cgroup2 mount, or CgroupEnv is "off".
func newPluginCgroup(name string) (string, error) {
	if os.Getenv(CgroupEnv) == "off" {
		return "", fmt.Errorf("%s=off", CgroupEnv)
	}
	parent, err := ownCgroupDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, "flashcore-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("create a cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("%s is not a cgroup: %w", dir, err)
	}
	return dir, nil
}

// ownCgroupDir is the directory of this process's cgroup v2 group.
func ownCgroupDir() (string, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mountPoint, root, ok := cgroup2Mount(string(mountinfo))
	if !ok {
		return "", errors.New("no cgroup2 mount")
	}
	membership, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	path, ok := unifiedPath(string(membership))
	if !ok {
		return "", errors.New("not in a cgroup v2 group")
	}
	rel, ok := strings.CutPrefix(path, root)
	if !ok {
		return "", fmt.Errorf("cgroup %s is outside the cgroup2 mount of %s", path, root)
	}
	return filepath.Join(mountPoint, rel), nil
}

// cgroup2Mount finds the cgroup2 mount in a /proc/self/mountinfo text: its
// mount point and the cgroup path it shows as its root.
func cgroup2Mount(mountinfo string) (mountPoint, root string, ok bool) {
	scanner := bufio.NewScanner(strings.NewReader(mountinfo))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && i >= 5 {
				return unescapeMountPath(fields[4]), unescapeMountPath(fields[3]), true
			}
		}
	}
	return "", "", false
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unifiedPath is the cgroup v2 path ("0::/a/b") in a /proc/self/cgroup text.
func unifiedPath(membership string) (string, bool) {
	for _, line := range strings.Split(membership, "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return path, true
		}
	}
	return "", false
}

// killCgroup SIGKILLs every process in the group at once through
// cgroup.kill (Linux 5.14 and later), else by killing the pids it lists
// until it lists none.
func killCgroup(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	deadline := time.Now().Add(cgroupKillLimit)
	for time.Now().Before(deadline) {
		pids := cgroupPids(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

func cgroupPids(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, field := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(field); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeCgroup kills what is left in the group and removes it, waiting
// (up to cgroupKillLimit) for its processes to finish dying.
func removeCgroup(dir string) error {
	killCgroup(dir)
	deadline := time.Now().Add(cgroupKillLimit)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// freezeLimit bounds the wait for a cgroup to report itself frozen.
const freezeLimit = 2 * time.Second

// setFrozen freezes (or thaws) every process of the group through
// cgroup.freeze, and waits until cgroup.events says it is done.
func setFrozen(dir string, frozen bool) error {
	value := "0"
	if frozen {
		value = "1"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte(value), 0); err != nil {
		return err
	}
	deadline := time.Now().Add(freezeLimit)
	for {
		events, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return err
		}
		if strings.Contains(string(events), "frozen "+value) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still not frozen=%s after %v", dir, value, freezeLimit)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// cpuUsage is the CPU time every process of the group has used, from
// cpu.stat's usage_usec (kept by every cgroup v2 group, the cpu controller
// enabled or not).
func cpuUsage(dir string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}
