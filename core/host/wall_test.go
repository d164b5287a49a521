package host

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReadableOutside: a plugin reads everything but the private
// directories and, in a shared one (the temporary directory), the other
// plugins' workspaces and socket directories, so a checkout or a venv
// under /tmp stays readable.
func TestReadableOutside(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{
		"dev/shm/flashcore-cpu-reference-1", "etc",
		"tmp/flashcore-triton-2/rows", "tmp/flashcore-run-3-4", "tmp/plugin567", "tmp/checkout/.venv",
		"tmp/go-build1",
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := readableOutside(root, []string{filepath.Join(root, "dev")}, []string{filepath.Join(root, "tmp")})
	want := []string{filepath.Join(root, "etc"), filepath.Join(root, "tmp", "checkout"), filepath.Join(root, "tmp", "go-build1")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readableOutside = %q, want %q", got, want)
	}
}
