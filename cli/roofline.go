package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/calibrate"
)

const calibrateUsage = `flashcore calibrate: measure this machine's peaks for the roofline

Usage:
  flashcore calibrate [--device gpu|cpu] [--copy-mib N] [--gemm-n N] [--repeats N]

Measures bandwidth with a large device-to-device copy (bytes read plus
written) and compute with a large matrix product (fp16 and bf16 on a GPU,
fp32 on a CPU), each the best of several timed calls, with torch on the
project's Python ($FLASHCORE_PYTHON, else the checkout's .venv, else
python3). The peaks are cached per device (name, UUID, driver) in the
user's cache directory, where flashcore roofline finds them.

Exit codes: 0 measured and cached, 2 usage error, 4 the measurement failed.
`

func calibrateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, calibrateUsage) }
	kind := fs.String("device", defaultDeviceKind(), "gpu or cpu")
	copyMiB := fs.Int("copy-mib", 0, "size of the copy in MiB (default: 1024 on a GPU, 256 on a CPU)")
	gemmN := fs.Int("gemm-n", 0, "N of the N×N×N product (default: 8192 on a GPU, 2048 on a CPU)")
	repeats := fs.Int("repeats", 0, "timed calls of each, the best kept (default: 20 on a GPU, 5 on a CPU)")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *kind != "gpu" && *kind != "cpu" {
		return withCode(ExitUsage, fmt.Errorf("--device %q: want gpu or cpu", *kind))
	}
	sizes := calibrate.DefaultSizes(*kind)
	for _, o := range []struct {
		v   int
		dst *int
	}{{*copyMiB, &sizes.CopyMiB}, {*gemmN, &sizes.GEMMN}, {*repeats, &sizes.Repeats}} {
		if o.v < 0 {
			return withCode(ExitUsage, errors.New("--copy-mib, --gemm-n and --repeats must be positive"))
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	python := bridge.Interpreter()
	fmt.Fprintf(stderr, "calibrating the %s with %s ...\n", *kind, python)
	p, err := calibrate.Measure(ctx, python, *kind, cpuName(), sizes)
	if err != nil {
		return withCode(ExitOther, err)
	}
	path, err := calibrate.Save(p)
	if err != nil {
		return withCode(ExitOther, fmt.Errorf("cache the calibration: %w", err))
	}
	fmt.Fprintln(stdout, runreport.PeaksLine(p.Name, reportPeaks(p)))
	fmt.Fprintf(stderr, "cached in %s\n", path)
	return nil
}

// defaultDeviceKind is gpu where an NVIDIA device node exists.
func defaultDeviceKind() string {
	if _, err := os.Stat("/dev/nvidia0"); err == nil {
		return "gpu"
	}
	return "cpu"
}

// cpuName is the CPU's name as the CPU backends report it.
func cpuName() string {
	if name := runner.CPUModel(); name != "" {
		return name
	}
	return runtime.GOARCH + " cpu"
}

func reportPeaks(p calibrate.Peaks) runreport.Peaks {
	return runreport.Peaks{TFLOPS: p.TFLOPS, GBps: p.GBps, Method: p.Method, When: "measured " + p.MeasuredAt.Format(time.DateOnly)}
}

const rooflineUsage = `flashcore roofline: each result on its device's roofline

Usage:
  flashcore roofline RESULTS.json [--peaks FILE] [--format table|markdown]

For each passing, timed row: arithmetic intensity (FLOPs over the least
bytes moved), achieved TFLOP/s and GB/s as shares of the device's measured
peaks, which side of the ridge it lies, and how close it comes to the roof
at its intensity. The peaks are those flashcore calibrate cached for the
device (or the calibration file --peaks names); the datasheet's are shown
beside them.

Exit codes: 0 drawn, 2 usage error or unreadable file, 4 other errors.
`

func rooflineCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("roofline", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, rooflineUsage) }
	peaksFile := fs.String("peaks", "", "a calibration file to use instead of the cache")
	format := fs.String("format", "table", "table or markdown")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	markdown, err := gateFormat(*format)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(positional) != 1 {
		return withCode(ExitUsage, errors.New("usage: flashcore roofline RESULTS.json [--peaks FILE] [--format F]"))
	}
	run, err := results.Load(positional[0])
	if err != nil {
		return withCode(ExitUsage, err)
	}
	all, err := cachedPeaks(*peaksFile)
	if err != nil {
		return err
	}
	peaks := map[string]runreport.Peaks{}
	for _, b := range run.Backends {
		if p, ok := calibrate.Lookup(all, b.Device.Name); ok {
			peaks[b.Device.Name] = reportPeaks(p)
		}
	}
	return runreport.WriteRoofline(stdout, run, peaks, markdown)
}

func cachedPeaks(file string) ([]calibrate.Peaks, error) {
	if file == "" {
		all, err := calibrate.LoadAll()
		if err != nil {
			return nil, withCode(ExitOther, err)
		}
		return all, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	var p calibrate.Peaks
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("%s: not a calibration file: %w", file, err))
	}
	return []calibrate.Peaks{p}, nil
}
