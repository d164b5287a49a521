// Package devices finds the GPUs of this host for flashcore run --devices.
// It asks nvidia-smi, so the host stays free of CUDA: no cgo, no driver
// library loaded into the flashcore process. Start at List.
//
// Listing (running nvidia-smi) is kept apart from parsing (Parse), so the
// parser is tested on captured output without a GPU.
package devices

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/core/results"
)

// Query is the nvidia-smi query List runs; Parse reads its output.
var Query = []string{"--query-gpu=index,name,uuid,clocks.max.sm,clocks.max.memory", "--format=csv,noheader,nounits"}

// ErrNoGPU is wrapped by List's error when this machine has no GPU to offer.
var ErrNoGPU = errors.New("no GPU")

// List runs nvidia-smi and returns the host's GPUs in its index order.
func List(ctx context.Context) ([]results.RowDevice, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, fmt.Errorf("%w: nvidia-smi, which lists the GPUs, is not on PATH", ErrNoGPU)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, Query...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: nvidia-smi %s failed (%v): %s", ErrNoGPU, strings.Join(Query, " "), err, firstLine(out))
	}
	gpus, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi output: %w", err)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("%w: nvidia-smi lists none", ErrNoGPU)
	}
	return gpus, nil
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// Parse reads the CSV lines of Query: index, name, uuid, max SM clock and
// max memory clock in MHz ("[N/A]" where the GPU does not say).
func Parse(out []byte) ([]results.RowDevice, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = 5
	records, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	var gpus []results.RowDevice
	for i, rec := range records {
		index, err := strconv.Atoi(rec[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: index %q is not a number", i+1, rec[0])
		}
		gpus = append(gpus, results.RowDevice{Index: index, Name: rec[1], UUID: rec[2],
			SMClockMHz: mhz(rec[3]), MemClockMHz: mhz(rec[4])})
	}
	return gpus, nil
}

// mhz reads a clock; 0 for "[N/A]" and other non-numbers.
func mhz(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return v
}

// Choose picks the GPUs --devices names: "all", or indexes "0,1,...".
func Choose(gpus []results.RowDevice, spec string) ([]results.RowDevice, error) {
	if strings.TrimSpace(spec) == "all" {
		return gpus, nil
	}
	var chosen []results.RowDevice
	for _, part := range strings.Split(spec, ",") {
		index, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--devices %q: want all or GPU indexes such as 0,1", spec)
		}
		i := slices.IndexFunc(gpus, func(g results.RowDevice) bool { return g.Index == index })
		if i < 0 {
			return nil, fmt.Errorf("--devices %q: this machine has no GPU %d (it has: %s)", spec, index, indexes(gpus))
		}
		if slices.ContainsFunc(chosen, func(g results.RowDevice) bool { return g.Index == index }) {
			return nil, fmt.Errorf("--devices %q names GPU %d twice", spec, index)
		}
		chosen = append(chosen, gpus[i])
	}
	return chosen, nil
}

func indexes(gpus []results.RowDevice) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(parts, ", ")
}

// PinEnv is the environment that pins a plugin, and every process it
// starts (the Python workers too), to gpu. The UUID names the same GPU
// whatever order CUDA enumerates in (CUDA_DEVICE_ORDER), unlike the index.
func PinEnv(gpu results.RowDevice) []string {
	return []string{"CUDA_VISIBLE_DEVICES=" + gpu.UUID}
}

// UUIDs are the UUIDs nvidia-smi -L lists: every GPU's ("GPU-…") and, on a
// GPU split by MIG, every instance's ("MIG-…"); none where nvidia-smi is
// missing or fails. The host matches a backend's claimed GPU against them
// (sdk.Device.UUID).
func UUIDs(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "-L").Output()
	if err != nil {
		return nil
	}
	return ParseUUIDs(out)
}

// ParseUUIDs reads nvidia-smi -L's lines, such as
//
//	GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-8a7b6c5d-…)
//	  MIG 1g.10gb     Device  0: (UUID: MIG-0f1e2d3c-…)
func ParseUUIDs(out []byte) []string {
	var uuids []string
	for _, line := range strings.Split(string(out), "\n") {
		_, rest, ok := strings.Cut(line, "(UUID: ")
		if !ok {
			continue
		}
		if uuid, _, ok := strings.Cut(rest, ")"); ok && uuid != "" {
			uuids = append(uuids, strings.TrimSpace(uuid))
		}
	}
	return uuids
}

// SameUUID reports whether two spellings name one device: case and the
// "GPU-" or "MIG-" prefix aside (torch prints the bare UUID, and the
// driver's bytes for a MIG instance are the same under either prefix).
func SameUUID(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		return strings.TrimPrefix(strings.TrimPrefix(s, "gpu-"), "mig-")
	}
	return a != "" && b != "" && norm(a) == norm(b)
}
