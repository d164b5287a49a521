package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flashcore/bench/internal/environ"
)

// IsolationEnv turns the walls between plugins off when set to "off"
// (Landlock, the freezer and the plugins' own uids; the cgroup has its own
// switch, CgroupEnv).
const IsolationEnv = "FLASHCORE_ISOLATION"

// wallRules are what one plugin may touch once confined: it reads and runs
// what Read names, reads and writes beneath Write (its own workspace, its
// socket directory and its caches) and opens the Devices for reading and
// writing. Everything else, the other plugins' workspaces above all, it can
// neither see nor change. Signals it sends and abstract Unix sockets it
// opens stay among its own processes where the kernel can scope them.
type wallRules struct {
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Devices []string `json:"devices"`
	// UID is the plugin's own user (users.go), which the wall becomes once
	// it has confined itself, just before it executes the plugin; 0 keeps
	// the host's.
	UID int `json:"uid,omitempty"`
}

// encode is the rules as the reaper passes them on; "" for none.
func (w *wallRules) encode() string {
	if w == nil {
		return ""
	}
	data, _ := json.Marshal(w)
	return string(data)
}

// wallFor makes a plugin's rules. private are directories no plugin reads
// in (but beneath what it is given); shared are those where plugins'
// workspaces and sockets are made among other things (the temporary
// directories): a plugin reads what is there when it starts, but no
// workspace's or socket directory's name (ownedByAPlugin), nor what is
// made there later. extraRead are the plugin's own files that may lie in
// either (its binary, its Python or CUDA file, PYTHONPATH).
func wallFor(private, shared, write, extraRead []string) *wallRules {
	private, shared = canonical(private), canonical(shared)
	// /proc is writable because the CUDA driver names its threads through
	// /proc/self/task/<tid>/comm, and cuInit fails without it (measured on
	// an H100); Landlock cannot grant each process of a plugin its own
	// /proc entry only. Another plugin's entries stay out of reach where
	// they need ptrace access, which Landlock denies across domains.
	w := &wallRules{Write: canonical(append(write, "/proc")), Devices: deviceFiles()}
	w.Read = append(readableOutside("/", private, shared), canonical(extraRead)...)
	return w
}

// readableOutside lists the paths beneath dir a plugin may read: dir
// itself when no private or shared directory lies within it, else its
// entries, each the same way, leaving out the private directories and, in
// a shared one, what a plugin owns.
func readableOutside(dir string, private, shared []string) []string {
	if slices.Contains(private, dir) {
		return nil
	}
	isShared := slices.Contains(shared, dir)
	if !isShared && !slices.ContainsFunc(append(slices.Clone(private), shared...), func(p string) bool { return within(p, dir) }) {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var paths []string
	for _, e := range entries {
		if isShared && ownedByAPlugin(e.Name()) {
			continue
		}
		paths = append(paths, readableOutside(filepath.Join(dir, e.Name()), private, shared)...)
	}
	return paths
}

// ownedByAPlugin tells a plugin's scratch directory (flashcore-<name>-*,
// and the work directories of older versions, flashcore-run-*) and
// go-plugin's socket directories (plugin*) by their names.
func ownedByAPlugin(name string) bool {
	return strings.HasPrefix(name, "flashcore-") || strings.HasPrefix(name, "plugin")
}

// within reports whether path lies beneath dir (or is dir).
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// canonical cleans each path, resolves its links (a rule holds for what a
// path names) and drops the empty, the duplicates and the missing.
func canonical(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		} else {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// deviceFiles are the device files a plugin may open for writing: the
// usual character devices and the GPU's.
func deviceFiles() []string {
	files := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	for _, pattern := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*"} {
		matches, _ := filepath.Glob(pattern)
		files = append(files, matches...)
	}
	return files
}

// privateDirs are the directories a plugin reads nothing in but what it
// is given: /dev, of which it gets only deviceFiles (a disk's device file
// would show every plugin's files).
func privateDirs() []string { return []string{"/dev"} }

// sharedDirs are where scratch directories, row workspaces and go-plugin's
// sockets are made, among other things: the temporary directory and the
// run's work directory.
func sharedDirs(scratchRoot string) []string {
	return []string{os.TempDir(), scratchRoot}
}

// pythonPlaces are where a plugin's Python lives, by its environment:
// the PYTHONPATH entries, and the environment (a venv) FLASHCORE_PYTHON's
// interpreter is in.
func pythonPlaces(env []string) []string {
	var places []string
	if path := environ.Value(env, "PYTHONPATH"); path != "" {
		places = filepath.SplitList(path)
	}
	if python := environ.Value(env, "FLASHCORE_PYTHON"); strings.Contains(python, "/") {
		places = append(places, filepath.Dir(filepath.Dir(python)))
	}
	return places
}

// cacheEnv are the variables that name a cache a plugin writes to; a
// confined plugin may write beneath the directory each one names.
var cacheEnv = []string{"TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "TORCHINDUCTOR_CACHE_DIR", "FLASHCORE_CACHE_DIR"}

// caches gives the plugin a cache directory of its own, kept between runs
// (compiled Triton and CUDA kernels, torch.compile's graphs, cu: files'
// cubins): it returns extra with TRITON_CACHE_DIR, CUDA_CACHE_PATH,
// TORCHINDUCTOR_CACHE_DIR and FLASHCORE_CACHE_DIR pointing
// into it, which lose to the host's environment where it names others
// (cacheDirs makes whichever wins writable). No plugin can then leave a
// compiled kernel where another would load it.
func (pp *pluginProcess) caches(extra []string) []string {
	base := pluginCacheRoot()
	if base == "" {
		return extra
	}
	dir := filepath.Join(base, safeName(pp.plugin.Name))
	return append(append([]string(nil), extra...),
		"TRITON_CACHE_DIR="+filepath.Join(dir, "triton"), "CUDA_CACHE_PATH="+filepath.Join(dir, "nv"),
		"TORCHINDUCTOR_CACHE_DIR="+filepath.Join(dir, "inductor"), "FLASHCORE_CACHE_DIR="+dir)
}

// sharedCacheRoot is where the plugins' caches are kept where each plugin
// has a uid of its own (users.go): root's home is closed to other users, so
// each plugin's cache is a directory of its own here, open to it alone.
const sharedCacheRoot = "/var/cache/flashcore/plugins"

// pluginCacheRoot is the directory the plugins' caches are made in: the
// user's cache folder (~/.cache/flashcore/plugins), or sharedCacheRoot
// where plugins get uids of their own and it can be made; "" when there is
// none.
func pluginCacheRoot() string {
	if CurrentIsolation().UIDs {
		if os.MkdirAll(sharedCacheRoot, 0o755) == nil {
			return sharedCacheRoot
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "flashcore", "plugins")
}

// cacheDirs are the directories the cache variables of env name, made
// where missing.
func cacheDirs(env []string) []string {
	var dirs []string
	for _, key := range cacheEnv {
		if v := environ.Value(env, key); v != "" && os.MkdirAll(v, 0o755) == nil {
			dirs = append(dirs, v)
		}
	}
	return dirs
}

// safeName makes a plugin name usable as one path element.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// fileDir is the directory of a plugin's own file, or "" when it has none.
func fileDir(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Dir(path)
}

// linkedDir is the directory of the file path links to, or "".
func linkedDir(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return filepath.Dir(real)
}

// wallEnv carries the wall's rules (JSON) from the reaper to the wall.
const wallEnv = "FLASHCORE_WALL"
