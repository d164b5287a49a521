package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// testManifest is what compile-kernels.sh writes for a fatbin built from
// sources.
func testManifest(fatbin []byte, sources map[string][]byte, kernel string) Manifest {
	m := Manifest{
		Schema: 1, Kernel: kernel, FatbinSHA256: hexSum(fatbin), SourceSHA256: SourceHash(sources),
		NVCCVersion: "Cuda compilation tools, release 11.8, V11.8.89", Flags: []string{"-O3"},
		Gencode: []string{"arch=compute_80,code=sm_80"}, Cubins: []string{"sm_80", "sm_89", "sm_90"}, PTX: []string{"compute_90"},
	}
	for _, p := range []string{"a/kernel.cu", "b/common.cuh"} {
		if c, ok := sources[p]; ok {
			m.Sources = append(m.Sources, ManifestSource{Path: p, SHA256: hexSum(c)})
		}
	}
	return m
}

func TestVerifyRefusesStaleKernels(t *testing.T) {
	fatbin := []byte("fatbin bytes")
	built := map[string][]byte{"a/kernel.cu": []byte("kernel v1"), "b/common.cuh": []byte("helpers v1")}
	m := testManifest(fatbin, built, "a/kernel.cu")
	withExtra := map[string][]byte{"a/kernel.cu": []byte("kernel v1"), "b/common.cuh": []byte("helpers v1"), "b/unused.cu": []byte("x")}
	tests := []struct {
		name     string
		fatbin   []byte
		sources  map[string][]byte
		manifest Manifest
		want     string // part of the error; "" for none
	}{
		{"fresh", fatbin, built, m, ""},
		{"fresh with unrelated embedded files", fatbin, withExtra, m, ""},
		{"kernel edited", fatbin, map[string][]byte{"a/kernel.cu": []byte("kernel v2"), "b/common.cuh": []byte("helpers v1")}, m,
			"a/kernel.cu changed since the fatbin was built"},
		{"header edited", fatbin, map[string][]byte{"a/kernel.cu": []byte("kernel v1"), "b/common.cuh": []byte("helpers v2")}, m,
			"b/common.cuh changed"},
		{"header not embedded", fatbin, map[string][]byte{"a/kernel.cu": []byte("kernel v1")}, m,
			"b/common.cuh, which this binary does not embed"},
		{"fatbin replaced", []byte("other fatbin"), built, m, "is not the one its manifest describes"},
		{"kernel not listed", fatbin, built, testManifest(fatbin, map[string][]byte{"b/common.cuh": []byte("helpers v1")}, "a/kernel.cu"),
			"does not list the kernel source"},
	}
	for _, tc := range tests {
		err := tc.manifest.Verify(tc.fatbin, tc.sources)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), StalePrefix)):
			t.Errorf("%s: error %v, want one starting %q and mentioning %q", tc.name, err, StalePrefix, tc.want)
		}
	}
}

// SourceHash must be what `sha256sum FILES | sha256sum` gives for the files
// sorted by path, which is how compile-kernels.sh computes it.
func TestSourceHashIsTheSha256sumListingHash(t *testing.T) {
	files := map[string][]byte{"z/last.cuh": []byte("z\n"), "a/first.cu": []byte("a\n")}
	listing := hexSum([]byte("a\n")) + "  a/first.cu\n" + hexSum([]byte("z\n")) + "  z/last.cuh\n"
	if got, want := SourceHash(files), hexSum([]byte(listing)); got != want {
		t.Errorf("SourceHash = %s, want %s", got, want)
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		return
	}
	dir := t.TempDir()
	script := `cd "$1" && mkdir -p a z && printf 'a\n' > a/first.cu && printf 'z\n' > z/last.cuh && sha256sum a/first.cu z/last.cuh | sha256sum | cut -d' ' -f1`
	out, err := exec.Command("sh", "-c", script, "sh", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != SourceHash(files) {
		t.Errorf("sha256sum listing hash %s, SourceHash %s", got, SourceHash(files))
	}
}

func TestParseManifestRejectsIncompleteOrUnknown(t *testing.T) {
	good := testManifest([]byte("f"), map[string][]byte{"a/kernel.cu": []byte("k")}, "a/kernel.cu")
	data, _ := json.Marshal(good)
	if _, err := ParseManifest(data); err != nil {
		t.Fatalf("good manifest: %v", err)
	}
	for name, text := range map[string]string{
		"unknown field":  strings.Replace(string(data), `"schema":1`, `"schema":1,"extra":true`, 1),
		"wrong schema":   strings.Replace(string(data), `"schema":1`, `"schema":2`, 1),
		"no sources":     strings.Replace(string(data), `"sources":[{"path":"a/kernel.cu","sha256":"`+hexSum([]byte("k"))+`"}]`, `"sources":[]`, 1),
		"not json":       "{",
		"no code at all": strings.Replace(strings.Replace(string(data), `"cubins":["sm_80","sm_89","sm_90"]`, `"cubins":[]`, 1), `"ptx":["compute_90"]`, `"ptx":[]`, 1),
	} {
		if _, err := ParseManifest([]byte(text)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestTargetForFollowsTheDriversRule(t *testing.T) {
	m := Manifest{Cubins: []string{"sm_80", "sm_89", "sm_90"}, PTX: []string{"compute_90"}}
	tests := []struct {
		major, minor int
		want         string // "" when nothing runs
	}{
		{9, 0, "sm_90 cubin"},
		{8, 9, "sm_89 cubin"},
		{8, 6, "sm_80 cubin"}, // same major, lower minor: binary compatible
		{8, 0, "sm_80 cubin"},
		{10, 0, "PTX compute_90 JIT"},
		{12, 0, "PTX compute_90 JIT"},
		{7, 5, ""},
	}
	for _, tc := range tests {
		target, ok := m.TargetFor(tc.major, tc.minor)
		got := ""
		if ok {
			got = target.String()
		}
		if got != tc.want {
			t.Errorf("TargetFor(%d.%d) = %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}

// An arch-specific cubin (sm_90a, as cuda-hopper builds) is named as it is,
// and nothing else in such a fatbin runs on other devices.
func TestTargetForArchSpecificCubin(t *testing.T) {
	m := Manifest{Cubins: []string{"sm_90a"}}
	tests := []struct {
		major, minor int
		want         string // "" when nothing runs
	}{
		{9, 0, "sm_90a cubin"},
		{8, 9, ""},
		{10, 0, ""},
	}
	for _, tc := range tests {
		target, ok := m.TargetFor(tc.major, tc.minor)
		got := ""
		if ok {
			got = target.String()
		}
		if got != tc.want {
			t.Errorf("TargetFor(%d.%d) = %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}
