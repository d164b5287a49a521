// Package nvcc finds the CUDA compiler: the machine's own, else the one of
// the project's pinned CUDA toolchain that make build fetches. The cu:
// backends compile with it, doctor reports it, and the host checks that a
// plugin running as its own user can reach it.
package nvcc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Find is $FLASHCORE_NVCC, nvcc on PATH, $CUDA_HOME/bin/nvcc or
// /usr/local/cuda/bin/nvcc, else the nvcc of the project's pinned CUDA
// toolchain that make build fetched (~/.cache/flashcore/cuda-toolchain-*),
// the first that exists. A machine's own nvcc comes first: it is the one
// its driver is sure to understand.
func Find() (string, error) {
	if p := os.Getenv("FLASHCORE_NVCC"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	for _, home := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home == "" {
			continue
		}
		if p := filepath.Join(home, "bin", "nvcc"); isFile(p) {
			return p, nil
		}
	}
	if p := toolchainNVCC(); p != "" {
		return p, nil
	}
	return "", errors.New("no nvcc found (looked at $FLASHCORE_NVCC, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin and the toolchain make build fetches): run make cuda-toolchain, install the CUDA toolkit, or give the spec a prebuilt binary = \"kernel.cubin\"")
}

// ToolchainDir is the newest complete copy of the build's pinned CUDA
// toolchain under the user's cache (mk/cuda.mk fetches it there), or "".
func ToolchainDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	stamps, _ := filepath.Glob(filepath.Join(dir, "flashcore", "cuda-toolchain-*", ".installed"))
	newest, best := "", time.Time{}
	for _, stamp := range stamps {
		if info, err := os.Stat(stamp); err == nil && info.ModTime().After(best) {
			newest, best = filepath.Dir(stamp), info.ModTime()
		}
	}
	return newest
}

// InToolchain is the nvcc inside a toolchain folder.
func InToolchain(toolchain string) string {
	return filepath.Join(toolchain, "nvidia", "cu13", "bin", "nvcc")
}

// toolchainNVCC is the nvcc of ToolchainDir, or "".
func toolchainNVCC() string {
	if dir := ToolchainDir(); dir != "" && isFile(InToolchain(dir)) {
		return InToolchain(dir)
	}
	return ""
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}
