package multicall

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
)

func TestSelect(t *testing.T) {
	plugins := []Plugin{{Name: "cpu-reference"}, {Name: "python-file"}}
	tests := []struct {
		name     string
		args     []string
		plugin   string   // "" when an error is wanted
		wantArgs []string // what the plugin sees
		err      string
	}{
		{"started through its link", []string{"/x/bin/flashcore-backend-cpu-reference"}, "cpu-reference",
			[]string{"/x/bin/flashcore-backend-cpu-reference"}, ""},
		{"link with arguments", []string{"flashcore-backend-python-file", "--name", "a", "--file", "a.py"}, "python-file",
			[]string{"flashcore-backend-python-file", "--name", "a", "--file", "a.py"}, ""},
		{"by hand", []string{"/x/bin/flashcore-plugins", "python-file", "--name", "a"}, "python-file",
			[]string{"/x/bin/flashcore-backend-python-file", "--name", "a"}, ""},
		{"link to a plugin it does not hold", []string{"flashcore-backend-triton"}, "", nil, `no plugin "triton"`},
		{"by hand, unknown", []string{"flashcore-plugins", "triton"}, "", nil, `no plugin "triton"`},
		{"by hand, no name", []string{"flashcore-plugins"}, "", nil, "name the plugin"},
		{"by hand, a flag", []string{"flashcore-plugins", "--help"}, "", nil, "name the plugin"},
		{"empty", nil, "", nil, "no command line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, args, err := Select(tt.args, plugins)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || plugin.Name != tt.plugin || !slices.Equal(args, tt.wantArgs) {
				t.Errorf("got %q %q %v, want %q %q", plugin.Name, args, err, tt.plugin, tt.wantArgs)
			}
		})
	}
}

func TestRewriteFile(t *testing.T) {
	tests := []struct {
		name, file, src, want, err string
		hasMain                    bool
	}{
		{"main.go", "main.go", "// Command x.\npackage main\n\nimport \"s\"\n\nfunc main() { s.Serve(New) }\n",
			"// Command x.\npackage plugin_x\n\nimport \"s\"\n\nfunc Main() { s.Serve(New) }\n", "", true},
		{"other file keeps main in strings and methods", "b.go",
			"//go:build cuda\n\npackage main\n\nvar s = \"main\"\n\nfunc (b *B) main() {}\n",
			"//go:build cuda\n\npackage plugin_x\n\nvar s = \"main\"\n\nfunc (b *B) main() {}\n", "", false},
		{"internal test", "b_test.go", "package main\n\nfunc main() {}\n", "package plugin_x\n\nfunc main() {}\n", "", false},
		{"external test", "c_test.go", "package main_test\n", "package plugin_x_test\n", "", false},
		{"not a main package", "lib.go", "package lib\n", "", "is package lib, not main", false},
		{"Main taken", "m.go", "package main\n\nfunc Main() {}\n", "", "declares Main", false},
		{"syntax error", "m.go", "package main\nfunc main() {", "", "expected", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, hasMain, err := rewriteFile(tt.file, []byte(tt.src), "plugin_x")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want || hasMain != tt.hasMain {
				t.Errorf("got %q main %v err %v\nwant %q main %v", got, hasMain, err, tt.want, tt.hasMain)
			}
		})
	}
}

// Every folder under plugins/ must go into a multi-call binary as it is:
// the Makefile finds them by their main.go, with no list to edit. A new
// plugin that cannot (a second package, a func Main of its own) fails here.
func TestEveryPluginFolderRewrites(t *testing.T) {
	root := moduleRoot(t)
	mains, err := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no plugin folders found (%v)", err)
	}
	for _, main := range mains {
		dir := filepath.Dir(main)
		if _, err := rewritePlugin(dir, packageName(dir)); err != nil {
			t.Errorf("plugins/%s: %v", filepath.Base(dir), err)
		}
	}
}

// A multi-call binary of two test plugins, built as make builds it, is each
// of them when the host starts it through a link of that plugin's name.
func TestMultiCallBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	root := moduleRoot(t)
	work := t.TempDir()
	overlay, err := Overlay(Build{
		Module:     "github.com/flashcore/bench",
		Root:       root,
		MainDir:    "cmd/flashcore-plugins",
		PluginDirs: []string{"internal/testplugins/echo", "internal/testplugins/nan"},
	}, filepath.Join(work, "overlay"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "bin")
	binary := filepath.Join(bin, "flashcore-plugins")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", binary, "./cmd/flashcore-plugins")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range []string{"echo", "nan"} {
		if err := os.Symlink("flashcore-plugins", filepath.Join(bin, BinaryPrefix+name)); err != nil {
			t.Fatal(err)
		}
	}
	found, err := host.Discover([]string{bin})
	if err != nil || len(found) != 2 {
		t.Fatalf("discovered %v, %v; want echo and nan", found, err)
	}
	for _, p := range found {
		instance, err := host.Start(context.Background(), p, host.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		description, err := instance.Backend().Describe(context.Background())
		instance.Close()
		if err != nil || description.Name != "test-"+p.Name {
			t.Errorf("started as %s, described itself as %q (%v)", p.Name, description.Name, err)
		}
	}
	out, err := exec.Command(binary).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "holds the plugins echo, nan") {
		t.Errorf("run by hand without a name: exit %d\n%s", code, out)
	}
}

func exitCode(err error) int {
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}
