package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClosedToOthers(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{filepath.Dir(root), root} { // the test's, and the case's
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(rel string, mode os.FileMode, dir bool) string {
		p := filepath.Join(root, rel)
		if dir {
			if err := os.Mkdir(p, mode); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	open := mk("open", 0o755, true)
	closed := mk("closed", 0o700, true)
	searchOnly := mk("search-only", 0o711, true)
	mk("open/tool", 0o755, false)
	mk("open/data", 0o644, false)
	mk("open/private", 0o600, false)
	mk("closed/tool", 0o755, false)
	mk("search-only/tool", 0o755, false)
	if err := os.Symlink(filepath.Join(closed, "tool"), filepath.Join(open, "link-to-closed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(open, "tool"), filepath.Join(open, "link-to-open")); err != nil {
		t.Fatal(err)
	}
	// The way to root itself must be open for any case to be.
	if way := closedToOthers(root, false); way != "" {
		t.Skipf("the temporary directory is closed to other users here (%s)", way)
	}
	tests := []struct {
		name, path string
		exec       bool
		want       string
	}{
		{"open binary", filepath.Join(open, "tool"), true, ""},
		{"open data", filepath.Join(open, "data"), false, ""},
		{"data run as a binary", filepath.Join(open, "data"), true, filepath.Join(open, "data")},
		{"private file", filepath.Join(open, "private"), false, filepath.Join(open, "private")},
		{"in a closed directory", filepath.Join(closed, "tool"), true, closed},
		{"a closed directory", closed, false, closed},
		{"through a directory others may only search", filepath.Join(searchOnly, "tool"), true, ""},
		{"a directory others may only search", searchOnly, false, searchOnly},
		{"a link into a closed directory", filepath.Join(open, "link-to-closed"), true, closed},
		{"a link to an open file", filepath.Join(open, "link-to-open"), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := closedToOthers(tt.path, tt.exec); got != tt.want {
				t.Errorf("closedToOthers(%s, %v) = %q, want %q", tt.path, tt.exec, got, tt.want)
			}
		})
	}
}

func TestPluginUIDs(t *testing.T) {
	a, b := pluginUID("uid-test-a"), pluginUID("uid-test-b")
	if a == b {
		t.Errorf("two plugins share uid %d", a)
	}
	if again := pluginUID("uid-test-a"); again != a {
		t.Errorf("the same name got uid %d, then %d", a, again)
	}
	for _, uid := range []int{a, b} {
		if uid < pluginUIDBase || uid >= pluginUIDBase+pluginUIDSpan {
			t.Errorf("uid %d is outside the plugins' range", uid)
		}
	}
	// A name whose uid another plugin holds moves on past every taken one.
	uidsMu.Lock()
	uidsTaken[a], uidsTaken[a+1] = "holder", "another holder"
	uidsMu.Unlock()
	if got := pluginUID("uid-test-a"); got != a+2 {
		t.Errorf("with uids %d and %d taken the name got %d, want %d", a, a+1, got, a+2)
	}
}

func TestUserNotes(t *testing.T) {
	inst := func(name, why string) *Instance {
		return &Instance{Plugin: Plugin{Name: name}, process: &pluginProcess{user: pluginUser{WhyNot: why}}}
	}
	got := userNotes([]*Instance{inst("b", "/root is closed"), nil, inst("a", "/root is closed"), inst("c", ""), inst("d", "X=y is the host's")})
	want := []string{"a uid for a, b: /root is closed", "a uid for d: X=y is the host's"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("userNotes = %q, want %q", got, want)
	}
}

// TestUserNotesStripControls: a plugin's name is its binary's file name,
// which may hold any byte but a slash; the run's header gets none of its
// control characters.
func TestUserNotesStripControls(t *testing.T) {
	inst := &Instance{Plugin: Plugin{Name: "x\x1b[2J\ry"}, process: &pluginProcess{user: pluginUser{WhyNot: "closed"}}}
	if got := userNotes([]*Instance{inst}); len(got) != 1 || strings.ContainsAny(got[0], "\x1b\r") {
		t.Errorf("userNotes = %q, want no control characters", got)
	}
}

func TestPluginUIDsUnmapped(t *testing.T) {
	full := "         0          0 4294967295\n"
	tests := []struct {
		name, uidMap, gidMap, setgroups string
		want                            string // "" or a part of the reason
	}{
		{"the initial namespace", full, full, "allow\n", ""},
		{"no /proc", "", "", "", ""},
		{"a container's 65536 ids", "0 100000 65536\n", "0 100000 65536\n", "allow\n", "/proc/self/uid_map"},
		{"uids mapped, gids not", full, "0 0 65536\n", "allow\n", "/proc/self/gid_map"},
		{"the range in a second line", "0 0 1000\n" + "1593835520 1593835520 16777216\n", full, "", ""},
		{"the range cut short", "0 0 1000\n1593835520 1593835520 16777215\n", full, "", "uid_map"},
		{"setgroups denied", full, full, "deny\n", "denies setgroups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pluginUIDsUnmapped(tt.uidMap, tt.gidMap, tt.setgroups)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("pluginUIDsUnmapped = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGiveTo: a plugin's directories, and all beneath them, become its
// uid's, the top ones private (0700); links are changed, not followed.
func TestGiveTo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give files away")
	}
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "triton", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "triton", "ab", "k.cubin"), filepath.Join(outside, "other")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "other"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	const uid = pluginUIDBase + 12345
	if err := giveTo(uid, dir, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "triton"), filepath.Join(dir, "triton", "ab", "k.cubin"), filepath.Join(dir, "link")} {
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if owner, _ := ownerOf(info); owner != uid {
			t.Errorf("%s is owned by %d, want %d", p, owner, uid)
		}
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("the directory's mode is %v, want 0700", info.Mode().Perm())
	}
	if info, _ := os.Stat(filepath.Join(outside, "other")); func() int { o, _ := ownerOf(info); return o }() != 0 {
		t.Errorf("a link's target outside was given away")
	}
}

// TestClosedPlaceFindsTheWorkersPython: the host checks the interpreter a
// bridge's worker would run on, by the bridges' own rule: a name without a
// slash on the plugin's PATH, and the checkout's .venv beside the binary.
func TestClosedPlaceFindsTheWorkersPython(t *testing.T) {
	if !CurrentIsolation().UIDs {
		t.Skip("plugins get no uids of their own here")
	}
	open := t.TempDir()
	for _, dir := range []string{filepath.Dir(open), open} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(path string, mode os.FileMode) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(path), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plugin := mk(filepath.Join(open, "bin", "flashcore-backend-x"), 0o755)
	openPy := mk(filepath.Join(open, "pyopen", "python3x"), 0o755)
	closedPy := mk(filepath.Join(open, "pyclosed", "python3x"), 0o700)
	tests := []struct {
		name string
		env  []string
		venv bool   // a closed checkout .venv beside the binary
		want string // "" or the closed place
	}{
		{"a name on PATH, open", []string{"FLASHCORE_PYTHON=python3x", "PATH=" + filepath.Dir(openPy)}, false, ""},
		{"a name on PATH, closed", []string{"FLASHCORE_PYTHON=python3x", "PATH=" + filepath.Dir(closedPy)}, false, filepath.Dir(closedPy)},
		{"a path, closed", []string{"FLASHCORE_PYTHON=" + closedPy}, false, filepath.Dir(closedPy)},
		{"the checkout's .venv, closed", []string{"PATH=" + filepath.Dir(openPy)}, true, filepath.Join(open, ".venv", "bin")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			venv := filepath.Join(open, ".venv")
			os.RemoveAll(venv)
			if tt.venv {
				mk(filepath.Join(venv, "bin", "python"), 0o700)
			}
			pp := &pluginProcess{plugin: Plugin{Name: "x", Path: plugin}, scratch: filepath.Join(open, "scratch")}
			got := pp.closedPlace(append(pp.caches(nil), tt.env...)) // as command() makes it
			if tt.want == "" && got != "" || tt.want != "" && !strings.HasPrefix(got, tt.want+",") {
				t.Errorf("closedPlace = %q, want %q first", got, tt.want)
			}
		})
	}
}
