package cudafile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/internal/nvcc"
)

// h100 is the device the compile tests target; no GPU is needed to compile.
var h100 = gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0}

func nvccOrSkip(t *testing.T) string {
	t.Helper()
	found, err := nvcc.Find()
	if err != nil {
		t.Skip(err)
	}
	return found
}

// The example compiles for the device's architecture with nvcc; a second
// request with the same tunables comes from the cache, another value of a
// tunable is another image.
func TestCompileTheExampleAndCacheIt(t *testing.T) {
	nvcc := nvccOrSkip(t)
	spec, err := Load(example)
	if err != nil {
		t.Fatal(err)
	}
	c := &Compiler{NVCC: nvcc, CacheDir: t.TempDir()}
	first, err := c.Image(spec, h100, map[string]string{"SPLITS": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Data) == 0 || first.Facts["kernel_target"] != "sm_90 cubin" || first.Facts["kernel_cache_hit"] != "false" ||
		!strings.Contains(first.Facts["kernel_compiler_flags"], "-DSPLITS=4") {
		t.Errorf("first image: %d bytes, facts %v", len(first.Data), first.Facts)
	}
	again, err := c.Image(spec, h100, map[string]string{"SPLITS": "4"})
	if err != nil || again.Key != first.Key || again.Facts["kernel_cache_hit"] != "true" {
		t.Errorf("second image: key %s (first %s), facts %v, %v", again.Key, first.Key, again.Facts, err)
	}
	other, err := c.Image(spec, h100, map[string]string{"SPLITS": "8"})
	if err != nil || other.Key == first.Key {
		t.Errorf("SPLITS=8 image: key %s, %v", other.Key, err)
	}
	for _, symbol := range []string{"splitkv_fp16_d64", "combine_bf16_d128"} {
		if !strings.Contains(string(first.Data), symbol) {
			t.Errorf("the cubin has no symbol %s", symbol)
		}
	}
	cached, _ := filepath.Glob(filepath.Join(c.CacheDir, "*.cubin"))
	if len(cached) != 2 {
		t.Errorf("cache holds %v, want 2 cubins", cached)
	}
}

// A kernel that does not compile is an error that carries nvcc's log.
func TestCompileErrorCarriesTheLog(t *testing.T) {
	nvcc := nvccOrSkip(t)
	spec, err := Load("testdata/broken.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := &Compiler{NVCC: nvcc, CacheDir: t.TempDir()}
	_, err = c.Image(spec, h100, nil)
	if err == nil || !strings.Contains(err.Error(), "compile broken.cu for sm_90 failed") || !strings.Contains(err.Error(), `identifier "undefined_name" is undefined`) {
		t.Errorf("error %v, want the compile failure with nvcc's log", err)
	}
	if entries, _ := os.ReadDir(c.CacheDir); len(entries) != 0 {
		t.Errorf("a failed compile left %d files in the cache", len(entries))
	}
}

// A prebuilt binary is loaded as it is, keyed by its hash.
func TestPrebuiltBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.cubin"), []byte("not really a cubin"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Binary: filepath.Join(dir, "k.cubin")}
	img, err := (&Compiler{}).Image(spec, h100, nil)
	if err != nil || string(img.Data) != "not really a cubin" || img.Facts["kernel_target"] != "prebuilt cubin" || len(img.Key) != 64 {
		t.Errorf("image %+v, %v", img, err)
	}
}

// A file the source includes by a quoted #include, beside it or in
// another folder, is part of the hash: changing it compiles again.
func TestSourceHashFollowsQuotedIncludes(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shared/forward.cu", "// forward v1\n#include \"common.inc\"\n")
	write("shared/common.inc", "// common v1\n")
	write("mine/kernel.cu", "#include <cuda_fp16.h>\n#include \"../shared/forward.cu\"\n")
	source := filepath.Join(dir, "mine", "kernel.cu")
	hashes := map[string]string{}
	for _, step := range []struct{ name, rel, text string }{
		{"first", "", ""},
		{"included file changed", "shared/forward.cu", "// forward v2\n#include \"common.inc\"\n"},
		{"file it includes changed", "shared/common.inc", "// common v2\n"},
	} {
		if step.rel != "" {
			write(step.rel, step.text)
		}
		h, err := sourceHash(source)
		if err != nil {
			t.Fatal(err)
		}
		for name, other := range hashes {
			if other == h {
				t.Errorf("%s: same hash as %s", step.name, name)
			}
		}
		hashes[step.name] = h
	}
}
