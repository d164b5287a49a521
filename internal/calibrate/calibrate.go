// Package calibrate measures the peaks a roofline is drawn against, once
// per device, and keeps them in the user's cache directory. Start at
// Measure; Load and Save are the cache.
//
//  1. Measure runs calibrate.py (embedded) on the project's Python with
//     torch: a large device-to-device copy for bandwidth, counting the
//     bytes read and written, and a large matrix product for compute
//     (fp16 and bf16 on a GPU, fp32 on a CPU), each the best of several
//     timed calls;
//  2. Save writes the Peaks to <cache>/flashcore/peaks/<key>.json, keyed
//     by the device's name, UUID and driver, so a new driver or another
//     card of the same name measures afresh;
//  3. Lookup finds the newest peaks measured on a device of a given name,
//     which is what a results file records.
package calibrate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

//go:embed calibrate.py
var script []byte

// Peaks are one device's measured peaks.
type Peaks struct {
	// Kind is "gpu" or "cpu"; Name is the device's name as backends report
	// it (a CPU's model name), UUID and Driver where the device has them.
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	UUID   string `json:"uuid,omitempty"`
	Driver string `json:"driver,omitempty"`
	// GBps is the copy's bandwidth, bytes read plus written, in 10⁹ B/s.
	GBps float64 `json:"gbps"`
	// TFLOPS is the fastest of the matrix products, in 10¹² FLOP/s, and
	// TFLOPSDType the dtype it was reached in; ByDType holds each.
	TFLOPS      float64            `json:"tflops"`
	TFLOPSDType string             `json:"tflops_dtype"`
	ByDType     map[string]float64 `json:"tflops_by_dtype"`
	// Method says how, in words a table header can show.
	Method     string    `json:"method"`
	Torch      string    `json:"torch"`
	MeasuredAt time.Time `json:"measured_at"`
}

// Sizes are how large the calibration's copy and product are.
type Sizes struct {
	CopyMiB int
	GEMMN   int
	Repeats int
}

// DefaultSizes are large enough to saturate the device: a copy far beyond
// any L2 and a product that keeps every SM busy for milliseconds on a GPU;
// smaller on a CPU, where the same product would take minutes.
func DefaultSizes(kind string) Sizes {
	if kind == "cpu" {
		return Sizes{CopyMiB: 256, GEMMN: 2048, Repeats: 5}
	}
	return Sizes{CopyMiB: 1024, GEMMN: 8192, Repeats: 20}
}

// scriptOutput is what calibrate.py prints.
type scriptOutput struct {
	Error       string             `json:"error"`
	Torch       string             `json:"torch"`
	Name        string             `json:"name"`
	UUID        string             `json:"uuid"`
	Driver      string             `json:"driver"`
	Threads     int                `json:"threads"`
	CopyBytes   float64            `json:"copy_bytes"`
	CopySeconds float64            `json:"copy_seconds"`
	GEMMN       float64            `json:"gemm_n"`
	GEMM        map[string]float64 `json:"gemm"`
}

// Measure runs the calibration on kind ("gpu" or "cpu") with python. A
// CPU's name is taken from cpuName, as the CPU backends report it.
func Measure(ctx context.Context, python, kind, cpuName string, sizes Sizes) (Peaks, error) {
	dir, err := os.MkdirTemp("", "flashcore-calibrate-")
	if err != nil {
		return Peaks{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "calibrate.py")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return Peaks{}, err
	}
	device := map[string]string{"gpu": "cuda", "cpu": "cpu"}[kind]
	if device == "" {
		return Peaks{}, fmt.Errorf("unknown device kind %q: want gpu or cpu", kind)
	}
	cmd := exec.CommandContext(ctx, python, path, device, fmt.Sprint(sizes.CopyMiB), fmt.Sprint(sizes.GEMMN), fmt.Sprint(sizes.Repeats))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Peaks{}, fmt.Errorf("calibrate with %s: %v: %s", python, err, lastLine(stderr.String()))
	}
	var out scriptOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return Peaks{}, fmt.Errorf("calibrate with %s: unreadable output %q: %v", python, lastLine(stdout.String()), err)
	}
	if out.Error != "" {
		return Peaks{}, fmt.Errorf("calibrate with %s: %s", python, out.Error)
	}
	return peaksOf(out, kind, cpuName, sizes), nil
}

func peaksOf(out scriptOutput, kind, cpuName string, sizes Sizes) Peaks {
	p := Peaks{Kind: kind, Name: out.Name, UUID: out.UUID, Driver: out.Driver, Torch: out.Torch,
		ByDType: map[string]float64{}, MeasuredAt: time.Now().UTC()}
	if kind == "cpu" {
		p.Name = cpuName
	}
	if out.CopySeconds > 0 {
		p.GBps = out.CopyBytes / out.CopySeconds / 1e9
	}
	flops := 2 * out.GEMMN * out.GEMMN * out.GEMMN
	for _, dtype := range sortedKeys(out.GEMM) {
		if s := out.GEMM[dtype]; s > 0 {
			p.ByDType[dtype] = flops / s / 1e12
			if p.ByDType[dtype] > p.TFLOPS {
				p.TFLOPS, p.TFLOPSDType = p.ByDType[dtype], dtype
			}
		}
	}
	p.Method = fmt.Sprintf("copy of %d MiB (read+write), %s GEMM %d³, best of %d (torch %s)",
		sizes.CopyMiB, strings.Join(sortedKeys(out.GEMM), "/"), sizes.GEMMN, sizes.Repeats, out.Torch)
	return p
}

// Dir is where peaks are cached: <user cache dir>/flashcore/peaks.
func Dir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the calibration: %w", err)
	}
	return filepath.Join(base, "flashcore", "peaks"), nil
}

var unsafeInKey = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Key names a device's cache file: its name, UUID and driver.
func (p Peaks) Key() string {
	parts := []string{p.Kind, p.Name}
	if p.UUID != "" {
		parts = append(parts, p.UUID)
	}
	if p.Driver != "" {
		parts = append(parts, "driver-"+p.Driver)
	}
	return strings.Trim(unsafeInKey.ReplaceAllString(strings.Join(parts, "-"), "_"), "_")
}

// Save writes p to the cache and returns the file's path.
func Save(p Peaks) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, p.Key()+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// LoadAll reads every cached calibration, newest first.
func LoadAll() ([]Peaks, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var all []Peaks
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var p Peaks
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("%s: %w (delete it, or run flashcore calibrate again)", f, err)
		}
		all = append(all, p)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].MeasuredAt.After(all[j].MeasuredAt) })
	return all, nil
}

// Lookup is the newest calibration of a device named name.
func Lookup(all []Peaks, name string) (Peaks, bool) {
	for _, p := range all {
		if p.Name == name {
			return p, true
		}
	}
	return Peaks{}, false
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
