package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/internal/cudafile"
	"github.com/flashcore/bench/internal/nvcc"
)

// TestCUDAFileWalkthrough follows the CUDA-file route of
// docs/adding-a-backend.md without a GPU: it writes the guide's kernel,
// spec and suite into an empty folder, checks they are the files
// examples/cuda/walkthrough holds (which scripts/gpu-cuda-file.sh runs on a
// GPU), runs the guide's describe with the real cuda-file plugin, makes the
// guide's typo and checks the error it shows, and compiles the kernel with
// nvcc for sm_80 and sm_90 where nvcc is installed.
func TestCUDAFileWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cuda-file plugin")
	}
	w := readWalkthrough(t, filepath.Join("..", "docs", "adding-a-backend.md"), cudaWalkthroughMarker)
	example, _ := filepath.Abs(filepath.Join("..", "examples", "cuda", "walkthrough"))
	for _, path := range []string{"my-cuda-kernel/attention.cu", "my-cuda-kernel/attention.toml", "my-cuda-kernel/suite.toml"} {
		want, err := os.ReadFile(filepath.Join(example, filepath.Base(path)))
		if err != nil {
			t.Fatal(err)
		}
		if w.files[path] != string(want) {
			t.Errorf("the guide's %s differs from examples/cuda/walkthrough/%s", path, filepath.Base(path))
		}
	}
	if len(w.commands) != 1 || w.commands[0][0] != "describe" {
		t.Fatalf("the guide's CUDA walk-through runs %q, want one describe", w.commands)
	}
	plugins := pluginDir(t, map[string]string{"cuda-file": "plugins/cuda-file/cmd/flashcore-backend-cuda-file"})
	t.Chdir(t.TempDir())
	writeWalkthroughFiles(t, w, "my-cuda-kernel/attention.cu", "my-cuda-kernel/attention.toml", "my-cuda-kernel/suite.toml")
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": plugins}

	stdout, stderr, code := runMain(t, env, w.commands[0]...)
	if code != ExitOK {
		t.Fatalf("flashcore %s: exit %d\n%s%s", strings.Join(w.commands[0], " "), code, stdout, stderr)
	}
	for _, want := range []string{"backend:   my-attention", "spec:      ", "variant my-attention", "dtypes:       fp16",
		"head dims:    64, 128", "masking:      none, causal (top-left)", "GQA:          yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("describe lacks %q:\n%s", want, stdout)
		}
	}

	spec := w.files["my-cuda-kernel/attention.toml"]
	typo := strings.Replace(spec, `"Sq", "Sk", "H"`, `"sq", "Sk", "H"`, 1)
	if typo == spec {
		t.Fatal("the guide's spec has no \"Sq\", \"Sk\", \"H\" params to misspell")
	}
	if err := os.WriteFile("my-cuda-kernel/attention.toml", []byte(typo), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runMain(t, env, w.commands[0]...)
	if code != ExitUsage || strings.TrimSpace(stderr) != strings.TrimSpace(w.files["typo"]) {
		t.Errorf("with the typo: exit %d, stderr\n%s\nwant exit %d and the guide's\n%s", code, stderr, ExitUsage, w.files["typo"])
	}
	if err := os.WriteFile("my-cuda-kernel/attention.toml", []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}

	nvcc, err := nvcc.Find()
	if err != nil {
		t.Skipf("the kernel is not compiled here: %v", err)
	}
	loaded, err := cudafile.Load("my-cuda-kernel/attention.toml")
	if err != nil {
		t.Fatal(err)
	}
	compiler := &cudafile.Compiler{NVCC: nvcc, CacheDir: t.TempDir()}
	for _, device := range []gpu.DeviceInfo{{Major: 8, Minor: 0}, {Major: 9, Minor: 0}} {
		img, err := compiler.Image(loaded, device, nil)
		if err != nil {
			t.Fatalf("compile for %s: %v", cudafile.Arch(device), err)
		}
		for _, symbol := range []string{"my_attention_d64", "my_attention_d128"} {
			if !strings.Contains(string(img.Data), symbol) {
				t.Errorf("the %s cubin has no %s", cudafile.Arch(device), symbol)
			}
		}
	}
}

// writeWalkthroughFiles writes the guide's files into the current folder.
func writeWalkthroughFiles(t *testing.T, w walkthrough, paths ...string) {
	t.Helper()
	for _, path := range paths {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(w.files[path]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
