package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstalledFolderMoves copies what make build put in bin/ (the
// flashcore binary, the multi-call plugin binaries and a link per plugin)
// to a folder elsewhere, as a user copies dist/ to another machine, and
// runs flashcore from yet another folder with no settings: the plugins
// must still be found through their links, and each must start as itself.
func TestInstalledFolderMoves(t *testing.T) {
	bin := os.Getenv("FLASHCORE_BIN")
	if bin == "" {
		t.Skip("FLASHCORE_BIN is not set: this test checks the layout make build makes (make test sets it)")
	}
	installed := filepath.Join(t.TempDir(), "flashcore")
	if out, err := exec.Command("cp", "-a", bin, installed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	links, _ := filepath.Glob(filepath.Join(installed, "flashcore-backend-*"))
	for _, link := range links {
		if target, err := os.Readlink(link); err == nil && filepath.IsAbs(target) {
			t.Errorf("%s links to %s: an absolute link breaks when the folder moves", filepath.Base(link), target)
		}
	}

	cmd := exec.Command(filepath.Join(installed, "flashcore"), "list")
	cmd.Dir = t.TempDir()
	cmd.Env = withoutSettings(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flashcore list: %v\n%s", err, out)
	}
	for _, name := range []string{"cpu-reference", "pytorch-sdpa", "triton", "cuda-v8"} {
		if !strings.Contains(string(out), "\n"+name+" ") {
			t.Errorf("flashcore list does not name %s\n%s", name, out)
		}
	}
	if !strings.Contains(string(out), "cpu-reference  yes") {
		t.Errorf("cpu-reference is not available\n%s", out)
	}
}

// withoutSettings is environ with nothing that tells flashcore where its
// plugins or Python are.
func withoutSettings(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if key, _, _ := strings.Cut(kv, "="); key != "FLASHCORE_PLUGIN_PATH" && key != "FLASHCORE_PYTHON" && key != "FLASHCORE_BIN" {
			env = append(env, kv)
		}
	}
	return env
}

// TestCUDAPluginsBuiltWithCUDA checks what make build made of the CUDA
// plugins where it built them with the cuda tag (make test says so in
// FLASHCORE_CUDA_BUILT): each must start and answer for itself. On a
// machine without the NVIDIA driver that answer is "no NVIDIA driver",
// from the driver shim they are linked with (docs/cuda.md), never "built
// without CUDA" and never a loader error.
func TestCUDAPluginsBuiltWithCUDA(t *testing.T) {
	bin := os.Getenv("FLASHCORE_BIN")
	if bin == "" || os.Getenv("FLASHCORE_CUDA_BUILT") != "yes" {
		t.Skip("FLASHCORE_BIN and FLASHCORE_CUDA_BUILT=yes are not set: make test sets them where it built the CUDA plugins with CUDA")
	}
	cmd := exec.Command(filepath.Join(bin, "flashcore"), "list")
	cmd.Env = withoutSettings(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flashcore list: %v\n%s", err, out)
	}
	_, statErr := os.Stat("/proc/driver/nvidia/version")
	hasDriver := statErr == nil
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "cuda-") || strings.HasPrefix(line, "cuda-file ") {
			continue
		}
		seen++
		switch {
		case strings.Contains(line, "built without CUDA"):
			t.Errorf("built with the cuda tag, yet: %s", line)
		case !hasDriver && !strings.Contains(line, "unavailable: no NVIDIA driver ("):
			t.Errorf("this machine has no NVIDIA driver; want the reason \"no NVIDIA driver (...)\", got: %s", line)
		}
	}
	if seen == 0 {
		t.Fatalf("flashcore list names no cuda-* plugin:\n%s", out)
	}
}
