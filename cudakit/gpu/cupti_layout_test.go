package gpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCUPTILayout checks cupti_layout.h against every CUPTI header found
// here: the system's, a CUDA install's, and those of the NVIDIA wheels in
// the project's Python environment (CUDA 13's, with torch). Each header's
// newest kernel record must agree with the offsets the CUDA plugins read.
func TestCUPTILayout(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dirs := cuptiHeaderDirs()
	if len(dirs) == 0 {
		t.Skip("no cupti_activity.h here")
	}
	layout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			compile := func(src string) ([]byte, error) {
				file := filepath.Join(t.TempDir(), "layout.c")
				if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				args := []string{"-fsyntax-only", "-I" + layout, "-I" + dir}
				args = append(args, runtimeHeaderDirs()...)
				return exec.Command(cc, append(args, file)...).CombinedOutput()
			}
			kernel := ""
			for v := 12; v >= 4 && kernel == ""; v-- {
				name := fmt.Sprintf("CUpti_ActivityKernel%d", v)
				if _, err := compile("#include <cupti_activity.h>\ntypedef " + name + " newest;\n"); err == nil {
					kernel = name
				}
			}
			if kernel == "" {
				t.Fatalf("%s/cupti_activity.h declares no CUpti_ActivityKernel4 to 12", dir)
			}
			if out, err := compile(layoutCheck(kernel)); err != nil {
				t.Fatalf("cupti_layout.h disagrees with %s/cupti_activity.h (%s):\n%s", dir, kernel, out)
			}
			t.Logf("%s agrees with cupti_layout.h", kernel)
		})
	}
}

func layoutCheck(kernel string) string {
	src := `#include <stddef.h>
#include <cupti_activity.h>
#include "cupti_layout.h"
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)
SAME(FC_CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
SAME(FC_CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
SAME(FC_CUPTI_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
SAME(FC_CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(FC_CUPTI_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
SAME(FC_CUPTI_EXTERNAL_CUSTOM0, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
SAME(FC_CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME(FC_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(FC_KERNEL_START, offsetof(RECORD, start));
SAME(FC_KERNEL_END, offsetof(RECORD, end));
SAME(FC_KERNEL_CORRELATION, offsetof(RECORD, correlationId));
SAME(FC_KERNEL_NAME, offsetof(RECORD, name));
SAME(FC_MEMSET_START, offsetof(CUpti_ActivityMemset, start));
SAME(FC_MEMSET_END, offsetof(CUpti_ActivityMemset, end));
SAME(FC_MEMSET_CORRELATION, offsetof(CUpti_ActivityMemset, correlationId));
SAME(FC_EXTERNAL_KIND, offsetof(CUpti_ActivityExternalCorrelation, externalKind));
SAME(FC_EXTERNAL_ID, offsetof(CUpti_ActivityExternalCorrelation, externalId));
SAME(FC_EXTERNAL_CORRELATION, offsetof(CUpti_ActivityExternalCorrelation, correlationId));
`
	return strings.ReplaceAll(src, "RECORD", kernel)
}

// cuptiHeaderDirs are the folders here that hold a cupti_activity.h.
func cuptiHeaderDirs() []string {
	candidates := []string{"/usr/include", "/usr/local/cuda/extras/CUPTI/include", "/usr/local/cuda/include"}
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if root := os.Getenv(env); root != "" {
			candidates = append(candidates, filepath.Join(root, "extras/CUPTI/include"), filepath.Join(root, "include"))
		}
	}
	wheels, _ := filepath.Glob("../../.venv/lib/python3*/site-packages/nvidia/*/include")
	candidates = append(candidates, wheels...)
	var dirs []string
	seen := map[string]bool{}
	for _, d := range candidates {
		abs, err := filepath.Abs(d)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		if _, err := os.Stat(filepath.Join(abs, "cupti_activity.h")); err == nil {
			dirs = append(dirs, abs)
		}
	}
	return dirs
}

// runtimeHeaderDirs are CUDA runtime headers that a CUPTI header may
// include (crt/host_defines.h) but that its own wheel lacks: those of the
// build's pinned toolchain (mk/cuda.mk), where make fetched it. They come
// after the CUPTI folder, so they fill gaps and override nothing.
func runtimeHeaderDirs() []string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "flashcore", "cuda-toolchain-*", "nvidia", "cu13", "include"))
	var flags []string
	for _, d := range dirs {
		flags = append(flags, "-idirafter", d)
	}
	return flags
}
