package cudafile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/internal/nvcc"
)

// compileTimeout bounds one nvcc run.
const compileTimeout = 5 * time.Minute

// headerExts are the files beside the source whose contents go into the
// cache key: a kernel's own headers change what it compiles to.
var headerExts = []string{".h", ".cuh", ".hpp", ".inc", ".inl"}

// Compiler makes module images from a spec for the device there: a
// prebuilt binary as it is, a source through nvcc, cached by what went in.
type Compiler struct {
	// NVCC is the compiler; "" finds it (nvcc.Find) on first use.
	NVCC string
	// CacheDir holds compiled images; "" is CacheDir().
	CacheDir string

	mu      sync.Mutex
	version string // nvcc --version's last line
}

// CacheDir is where compiled kernels are kept: $FLASHCORE_CACHE_DIR/cuda-file,
// else the user's cache folder (~/.cache/flashcore/cuda-file on Linux).
func CacheDir() string {
	if dir := os.Getenv("FLASHCORE_CACHE_DIR"); dir != "" {
		return filepath.Join(dir, "cuda-file")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "flashcore", "cuda-file")
	}
	return filepath.Join(os.TempDir(), "flashcore-cache", "cuda-file")
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// Arch is the nvcc target of a device: sm_90 for compute capability 9.0.
func Arch(d gpu.DeviceInfo) string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// Image returns the module image of spec for device with tunables: the
// prebuilt binary, or the source compiled for the device's architecture.
func (c *Compiler) Image(spec *Spec, device gpu.DeviceInfo, tunables map[string]string) (cudakit.Image, error) {
	if spec.Binary != "" {
		return prebuilt(spec.Binary)
	}
	return c.compile(spec, Arch(device), tunables)
}

func prebuilt(path string) (cudakit.Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return cudakit.Image{}, fmt.Errorf("read kernel binary: %w", err)
	}
	hash := sha256Hex(data)
	return cudakit.Image{Key: hash, Data: data, Facts: map[string]string{
		cudakit.FactKernelSourceHash:  hash,
		cudakit.FactKernelTarget:      "prebuilt " + strings.TrimPrefix(filepath.Ext(path), "."),
		cudakit.FactCompiler:          "prebuilt: " + filepath.Base(path),
		cudakit.FactCompilerFlags:     "",
		cudakit.FactKernelCompileFrom: path,
	}}, nil
}

// Args are nvcc's arguments for spec at arch with tunables, compiling
// source (the spec's, or the file of its template instances) to out.
// --resource-usage makes ptxas report each kernel's registers, spills and
// shared memory, which describe shows (Resources).
func Args(spec *Spec, arch string, tunables map[string]string, source, out string) []string {
	args := []string{"-cubin", "-arch=" + arch, "-O3", "--resource-usage", "-I", filepath.Dir(spec.Source)}
	for _, name := range slices.Sorted(maps.Keys(tunables)) {
		args = append(args, fmt.Sprintf("-D%s=%s", name, tunables[name]))
	}
	args = append(args, spec.Options...)
	return append(args, "-o", out, source)
}

// sourceHash hashes the source, the headers beside it and every file it
// includes by a quoted #include, followed from file to file, so that a
// change to any of them compiles the source again.
func sourceHash(source string) (string, error) {
	h := sha256.New()
	files := []string{source}
	entries, err := os.ReadDir(filepath.Dir(source))
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(headerExts, filepath.Ext(e.Name())) {
			files = append(files, filepath.Join(filepath.Dir(source), e.Name()))
		}
	}
	for i := 0; i < len(files); i++ {
		f := files[i]
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read kernel source: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
		for _, m := range quotedInclude.FindAllSubmatch(data, -1) {
			// nvcc looks beside the including file first, then in the
			// source's folder (-I); a name found in neither is a system
			// header's, which the compiler version stands for.
			for _, dir := range []string{filepath.Dir(f), filepath.Dir(source)} {
				path := filepath.Clean(filepath.Join(dir, string(m[1])))
				if isFile(path) {
					if !slices.Contains(files, path) {
						files = append(files, path)
					}
					break
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// quotedInclude matches a line's #include "name".
var quotedInclude = regexp.MustCompile(`(?m)^\s*#\s*include\s*"([^"]+)"`)

// compiled is a source compiled for one architecture and set of tunables.
type compiled struct {
	image cudakit.Image
	log   string // nvcc's output: ptxas's resource report
}

func (c *Compiler) compile(spec *Spec, arch string, tunables map[string]string) (cudakit.Image, error) {
	out, err := c.build(spec, arch, tunables)
	return out.image, err
}

// build compiles spec into the cache, or takes it from there, with the
// template instances' symbols and ptxas's report.
func (c *Compiler) build(spec *Spec, arch string, tunables map[string]string) (compiled, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nvcc, version, err := c.compiler()
	if err != nil {
		return compiled{}, err
	}
	src, err := sourceHash(spec.Source)
	if err != nil {
		return compiled{}, err
	}
	ids, err := spec.instances(tunables)
	if err != nil {
		return compiled{}, err
	}
	generated := ""
	if len(ids) > 0 {
		generated = instanceSource(spec.Source, ids)
	}
	flags := Args(spec, arch, tunables, "SOURCE", "OUT")
	key := sha256Hex([]byte(strings.Join(append([]string{src, version, generated}, flags...), "\x00")))
	dir := c.CacheDir
	if dir == "" {
		dir = CacheDir()
	}
	cached := filepath.Join(dir, key+".cubin")
	facts := map[string]string{
		cudakit.FactKernelSourceHash:  src,
		cudakit.FactKernelTarget:      arch + " cubin",
		cudakit.FactCompiler:          version,
		cudakit.FactCompilerFlags:     strings.Join(flags[:len(flags)-3], " "),
		cudakit.FactKernelCompileFrom: spec.Source,
		cudakit.FactKernelCacheHit:    "true",
	}
	data, err := os.ReadFile(cached)
	log, logErr := os.ReadFile(cached + ".log")
	if err != nil || logErr != nil {
		facts[cudakit.FactKernelCacheHit] = "false"
		if data, log, err = c.run(nvcc, spec, arch, tunables, generated, dir, cached); err != nil {
			return compiled{}, err
		}
	}
	symbols, err := instanceSymbols(data, ids)
	if err != nil {
		return compiled{}, fmt.Errorf("%s: %w", filepath.Base(spec.Source), err)
	}
	return compiled{image: cudakit.Image{Key: key, Data: data, Facts: facts, Symbols: symbols}, log: string(log)}, nil
}

// compiler finds nvcc and reads its version once.
func (c *Compiler) compiler() (compiler, version string, err error) {
	if c.NVCC == "" {
		if c.NVCC, err = nvcc.Find(); err != nil {
			return "", "", err
		}
	}
	if c.version == "" {
		out, err := exec.Command(c.NVCC, "--version").CombinedOutput()
		if err != nil {
			return "", "", fmt.Errorf("%s --version: %v: %s", c.NVCC, err, tail(out, 5))
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		c.version = strings.TrimSpace(lines[len(lines)-1])
		for _, l := range lines {
			if strings.Contains(l, "release") {
				c.version = strings.TrimSpace(l)
			}
		}
	}
	return c.NVCC, c.version, nil
}

// run compiles into the cache, atomically, keeping nvcc's output beside
// the cubin; on failure the error holds the first error, the command and
// the tail of nvcc's log. generated, when set, is the file of the template
// instances, compiled in place of the source.
func (c *Compiler) run(nvcc string, spec *Spec, arch string, tunables map[string]string, generated, dir, cached string) (cubin, log []byte, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("kernel cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".compile-*.cubin")
	if err != nil {
		return nil, nil, fmt.Errorf("kernel cache: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	source := spec.Source
	if generated != "" {
		source = strings.TrimSuffix(tmp.Name(), ".cubin") + ".cu"
		if err := os.WriteFile(source, []byte(generated), 0o644); err != nil {
			return nil, nil, fmt.Errorf("kernel cache: %w", err)
		}
		defer os.Remove(source)
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	args := Args(spec, arch, tunables, source, tmp.Name())
	cmd := exec.CommandContext(ctx, nvcc, args...)
	cmd.Dir = filepath.Dir(spec.Source)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("compile %s for %s failed (%v): %s\nnvcc %s\n%s",
			filepath.Base(spec.Source), arch, err, firstError(out.String(), filepath.Dir(spec.Source)), strings.Join(args[:len(args)-3], " "), tail(out.Bytes(), 30))
	}
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(cached+".log", out.Bytes(), 0o644); err != nil {
		return nil, nil, fmt.Errorf("kernel cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), cached); err != nil {
		return nil, nil, fmt.Errorf("kernel cache: %w", err)
	}
	return data, out.Bytes(), nil
}

// nvccError is a line of nvcc's where it reports an error: file(line): error: ...
var nvccError = regexp.MustCompile(`(?m)^(.+)\((\d+)\): (?:catastrophic )?error: (.*)$`)

// firstError is nvcc's first error as file:line: message, the file
// relative to dir (the source's folder) where it is inside, or else nvcc's
// first line that says error.
func firstError(log, dir string) string {
	if m := nvccError.FindStringSubmatch(log); m != nil {
		file := strings.TrimPrefix(m[1], dir+string(filepath.Separator))
		return fmt.Sprintf("%s:%s: %s", file, m[2], strings.TrimSpace(m[3]))
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "error") {
			return strings.TrimSpace(line)
		}
	}
	return "no error line in nvcc's output"
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
