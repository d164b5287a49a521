package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Discover finds plugin binaries and links to them (how a multi-call
// binary's plugins are installed), and passes over what cannot be started.
func TestDiscoverFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("flashcore-backend-alone", 0o755)
	write("flashcore-plugins", 0o755)
	link("flashcore-plugins", "flashcore-backend-linked")
	link("flashcore-plugins-gone", "flashcore-backend-dangling")
	write("flashcore-backend-not-executable", 0o644)
	write("notes.txt", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "flashcore-backend-folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("flashcore-backend-folder", "flashcore-backend-folder-link")

	found, err := Discover([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range found {
		names = append(names, p.Name)
		if p.Path != filepath.Join(dir, BinaryPrefix+p.Name) {
			t.Errorf("%s: path %s, want the link's own path (a multi-call binary tells its plugins apart by it)", p.Name, p.Path)
		}
	}
	if want := []string{"alone", "linked"}; !slices.Equal(names, want) {
		t.Errorf("found %v, want %v", names, want)
	}
}
