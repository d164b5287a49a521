package host

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/flashcore/bench/internal/environ"
	"github.com/flashcore/bench/internal/interpreter"
	"github.com/flashcore/bench/internal/nvcc"
	"github.com/flashcore/bench/internal/untrusted"
)

// A plugin's own user. Where the host runs as root, each plugin runs as an
// unprivileged uid of its own, with the gid of the same number and no
// supplementary groups. The kernel then keeps plugins apart where Landlock
// does not reach: one plugin cannot signal, trace or read the memory of
// another, nor open the files another made private (its workspace, its
// caches, mode 0700), and none has root's powers (sysctls under /proc,
// the cgroup tree, the GPU's clocks through the driver).
//
// The uid is the same for the same backend name in every run, so that a
// backend's caches stay its own between runs; it lies in a range no
// distribution gives its users.

const (
	pluginUIDBase = 0x5f000000
	pluginUIDSpan = 1 << 24
)

var (
	uidsMu    sync.Mutex
	uidsTaken = map[int]string{}
)

// pluginUID is the uid the backend named name runs as: a hash of the name
// into the range, moved on where another backend of this host has it.
func pluginUID(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	offset := int(h.Sum32() % pluginUIDSpan)
	uidsMu.Lock()
	defer uidsMu.Unlock()
	for {
		uid := pluginUIDBase + offset
		if owner, taken := uidsTaken[uid]; !taken || owner == name {
			uidsTaken[uid] = name
			return uid
		}
		offset = (offset + 1) % pluginUIDSpan
	}
}

// pluginUIDsUnmapped says why root cannot give plugins their uids in this
// user namespace ("" where it can), from /proc/self/uid_map, gid_map and
// setgroups: a container's namespace may map only some uids (root inside
// is then another uid outside), so that setresuid and chown to a plugin's
// uid fail, and one may deny setgroups, which giving up root's groups
// needs. Missing files (an old kernel, no /proc) mean the initial
// namespace.
func pluginUIDsUnmapped(uidMap, gidMap, setgroups string) string {
	for _, m := range []struct{ name, text string }{{"uid_map", uidMap}, {"gid_map", gidMap}} {
		if m.text != "" && !mapsRange(m.text, pluginUIDBase, pluginUIDSpan) {
			return fmt.Sprintf("this user namespace maps no ids %#x–%#x for plugins: /proc/self/%s", pluginUIDBase, pluginUIDBase+pluginUIDSpan-1, m.name)
		}
	}
	if strings.TrimSpace(setgroups) == "deny" {
		return "this user namespace denies setgroups, which giving up root's groups needs"
	}
	return ""
}

// mapsRange reports whether an id map (lines of "inside outside count")
// maps every id of [first, first+count) inside.
func mapsRange(idMap string, first, count int) bool {
	for _, line := range strings.Split(idMap, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		inside, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && inside <= int64(first) && int64(first)+int64(count) <= inside+n {
			return true
		}
	}
	return false
}

// readFile is path's text, "" when it cannot be read.
func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

// pluginUser is who a plugin runs as: UID 0 means the host's own user.
type pluginUser struct {
	UID int
	// WhyNot says why a plugin that could have had a uid of its own runs
	// as the host's user: a place it needs that other users cannot reach.
	WhyNot string
}

// own reports whether the plugin has a uid of its own.
func (u pluginUser) own() bool { return u.UID > 0 }

// chooseUser decides who the plugin runs as, before it starts. It gets a
// uid of its own where the machine's isolation allows uids and every place
// it needs is open to other users (closedPlace). env is its environment.
// A plugin under a profiler or a wrapper runs as the host's user, as it
// runs without its wall: the profiler needs the GPU's counters, which the
// driver keeps for root.
func (pp *pluginProcess) chooseUser(env []string, watched bool) pluginUser {
	if !CurrentIsolation().UIDs || watched {
		return pluginUser{}
	}
	if why := pp.closedPlace(env); why != "" {
		return pluginUser{WhyNot: why}
	}
	return pluginUser{UID: pluginUID(pp.plugin.Name)}
}

// closedPlace names the first place the plugin needs that a user of its
// own could not reach, with what needs it; "" when there is none. The
// places are its binary, its Python or CUDA file, the directory its
// workspace is made in, the Python interpreter and PYTHONPATH it would
// use, LD_LIBRARY_PATH, nvcc for a .cu file, and its caches. A cache named by the host's
// environment is shared by every plugin, so no one uid may own it.
func (pp *pluginProcess) closedPlace(env []string) string {
	type place struct {
		path, what string
		exec       bool
	}
	places := []place{
		{pp.plugin.Path, "the plugin's binary", true},
		{pp.plugin.PythonFile, "the Python file", false},
		{pp.plugin.CUDAFile, "the CUDA spec", false},
		{filepath.Dir(pp.scratch), "the workspaces", false},
	}
	// The interpreter its worker would run on, should it be a bridge (the
	// host cannot tell): the bridges' own rule, for the binary the link
	// names, as os.Executable gives it to the plugin.
	exe, err := filepath.EvalSymlinks(pp.plugin.Path)
	if err != nil {
		exe = pp.plugin.Path
	}
	python := interpreter.For(env, exe)
	if !strings.Contains(python, "/") {
		python, _ = lookPath(python, environ.Value(env, "PATH"))
	}
	if python != "" {
		places = append(places, place{python, "the Python, FLASHCORE_PYTHON, the checkout's .venv or python3 on PATH", true})
	}
	for _, dir := range pythonPlaces(env) {
		places = append(places, place{dir, "the Python's packages", false})
	}
	for _, dir := range filepath.SplitList(environ.Value(env, "LD_LIBRARY_PATH")) {
		places = append(places, place{dir, "a library directory, LD_LIBRARY_PATH", false})
	}
	if pp.plugin.CUDAFile != "" {
		if nvcc, err := nvcc.Find(); err == nil {
			places = append(places, place{nvcc, "nvcc", true})
		}
	}
	for _, kv := range pp.caches(nil) {
		key, own, _ := strings.Cut(kv, "=")
		if v := environ.Value(env, key); v != own {
			return fmt.Sprintf("%s=%s is the host's, shared by every plugin", key, v)
		}
	}
	// The plugin's own cache directory is given to it; the way there must
	// be open.
	places = append(places, place{pluginCacheRoot(), "the caches", false})
	for _, p := range places {
		if p.path == "" {
			continue
		}
		if _, err := os.Stat(p.path); err != nil {
			continue // what is missing fails the same way as any user
		}
		if closed := closedToOthers(p.path, p.exec); closed != "" {
			if closed == p.path {
				return closed + ", " + p.what + ", is closed to other users"
			}
			return closed + ", on the way to " + p.what + ", is closed to other users"
		}
	}
	return ""
}

// lookPath finds file in the PATH list path, as exec.LookPath would in a
// process with that PATH.
func lookPath(file, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, file)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// closedToOthers is the first path on the way to path (as written, and
// with its links resolved) that a user who neither owns it nor is in its
// group cannot pass: a directory others may not search, or the file
// itself where others may not read it (or run it, with exec; a directory
// must let them list it). "" when all are open. ACLs are not read: a
// place they open is still called closed, which costs the uid, never a
// plugin's start.
func closedToOthers(path string, exec bool) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	ways := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		ways = append(ways, real)
	}
	for _, way := range ways {
		for dir := filepath.Dir(way); ; dir = filepath.Dir(dir) {
			if info, err := os.Stat(dir); err != nil || info.Mode().Perm()&0o001 == 0 {
				return dir
			}
			if dir == "/" {
				break
			}
		}
		info, err := os.Stat(way)
		if err != nil {
			return way
		}
		want := fs.FileMode(0o004)
		if exec || info.IsDir() {
			want |= 0o001
		}
		if info.Mode().Perm()&want != want {
			return way
		}
	}
	return ""
}

// giveTo makes the plugin's user the owner of each directory in dirs and
// of everything beneath it, where it is not already (what a run as the
// host's user, under a profiler, left in its caches), without following
// links. Its own directories are then private to it (0700).
func giveTo(uid int, dirs ...string) error {
	var errs []error
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		errs = append(errs, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone meanwhile, or unreadable: the plugin will say
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if owner, ok := ownerOf(info); !ok || owner != uid {
				// A file another run of the same plugin removed meanwhile
				// (a cache's temporary file) needs no owner.
				if err := os.Lchown(path, uid, uid); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			return nil
		}))
		errs = append(errs, os.Chmod(dir, 0o700))
	}
	return errors.Join(errs...)
}

// ownerOf is the uid that owns the file info describes.
func ownerOf(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// WithUserNotes adds to what is not enforced which of the started
// instances could not have a uid of their own where the machine allows
// them, and why: one entry per reason.
func (i Isolation) WithUserNotes(instances []*Instance) Isolation {
	i.NotEnforced = append(slices.Clone(i.NotEnforced), userNotes(instances)...)
	return i
}

func userNotes(instances []*Instance) []string {
	byReason := map[string][]string{}
	for _, inst := range instances {
		if inst == nil || inst.process.user.WhyNot == "" {
			continue
		}
		why := inst.process.user.WhyNot
		// A name is its binary's file name: any byte but a slash.
		byReason[why] = append(byReason[why], untrusted.Text(inst.Plugin.Name))
	}
	var notes []string
	for why, names := range byReason {
		sort.Strings(names)
		notes = append(notes, "a uid for "+strings.Join(names, ", ")+": "+why)
	}
	sort.Strings(notes)
	return notes
}

// MakeDir makes a new directory in parent, named by pattern as
// os.MkdirTemp names it, that the plugin may write in: owned by its user
// where it has one of its own. The host writes a row's inputs in it and
// the plugin its outputs.
func (i *Instance) MakeDir(parent, pattern string) (string, error) {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", err
	}
	if u := i.process.user; u.own() {
		if err := os.Chown(dir, u.UID, u.UID); err != nil {
			_ = os.Remove(dir)
			return "", err
		}
	}
	return dir, nil
}

// UID is the uid the plugin runs as, and false where it runs as the
// host's user.
func (i *Instance) UID() (int, bool) { return i.process.user.UID, i.process.user.own() }
