package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/internal/nvcc"
)

// doctorCommand says what this machine has and lacks for each backend:
// the NVIDIA driver and GPUs, the pinned CUDA toolchain, Python with torch
// and triton, ncu and nvcc; then, as `list` does, which backends start here
// and why the others do not. `make doctor` adds what the build will do.
func doctorCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	toolchain := fs.String("toolchain", "", "the CUDA toolchain folder the build uses (make doctor passes it)")
	cudaBuild := fs.String("cuda-build", "", "what make decided for the CUDA plugins: yes, or empty (make doctor passes it)")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	probe := machineProbe{run: runProbe}
	findings := probe.examine(ctx, *toolchain, *cudaBuild)
	if err := writeFindings(stdout, findings); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "Backends here (flashcore list):")
	return listCommand(ctx, nil, stdout, stderr)
}

// A finding is one thing the doctor looked at: what it found, and what
// that means for the backends.
type finding struct {
	Area, Found, Means string
}

func writeFindings(w io.Writer, findings []finding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHAT\tFOUND\tWHAT IT MEANS")
	for _, f := range findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Area, f.Found, f.Means)
	}
	return tw.Flush()
}

// machineProbe runs the commands the doctor asks the machine; run returns
// a command's output, or an error when it is missing or fails.
type machineProbe struct {
	run func(ctx context.Context, name string, args ...string) (string, error)
}

func runProbe(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return strings.TrimSpace(string(out)), err
}

func (p machineProbe) examine(ctx context.Context, toolchain, cudaBuild string) []finding {
	var fs []finding
	fs = append(fs, finding{"machine", fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), ""})
	fs = append(fs, p.driver(ctx)...)
	fs = append(fs, cudaToolchainFinding(toolchain, cudaBuild, p))
	fs = append(fs, p.python(ctx)...)
	fs = append(fs, p.tool(ctx, "ncu", "used by flashcore profile and verify-timing's Nsight Compute column",
		"flashcore profile and verify-timing's Nsight Compute column need it"))
	fs = append(fs, p.tool(ctx, "nvcc", "cu: files are compiled with it at run time (the build uses its own)",
		"the build brings its own; cu: files fall back to the toolchain's"))
	return fs
}

func (p machineProbe) driver(ctx context.Context) []finding {
	version := nvidiaDriverVersion()
	if version == "" {
		return []finding{{"NVIDIA driver", "none (no /proc/driver/nvidia/version)",
			"the CUDA plugins say \"no NVIDIA driver\"; CPU backends and the Python bridges on the CPU run"}}
	}
	out, err := p.run(ctx, "nvidia-smi", "--query-gpu=index,name,compute_cap,memory.total", "--format=csv,noheader")
	gpus := "nvidia-smi did not answer"
	if err == nil && out != "" {
		gpus = strings.ReplaceAll(out, "\n", "; ")
	}
	return []finding{
		{"NVIDIA driver", version, "the CUDA plugins open its libcuda.so.1 at start"},
		{"GPUs", gpus, "cuda-hopper needs compute capability 9.0; the others 8.0 or newer"},
	}
}

// nvidiaDriverVersion is the kernel module's version, from the line
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ...".
func nvidiaDriverVersion() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if _, after, ok := strings.Cut(line, "Kernel Module"); ok {
		if f := strings.Fields(after); len(f) > 0 {
			return f[0]
		}
	}
	return strings.TrimSpace(line)
}

func cudaToolchainFinding(toolchain, cudaBuild string, p machineProbe) finding {
	f := finding{Area: "CUDA toolchain"}
	if toolchain == "" {
		toolchain = nvcc.ToolchainDir()
	}
	nvcc := nvcc.InToolchain(toolchain)
	switch {
	case toolchain == "":
		f.Found = "not fetched (no ~/.cache/flashcore/cuda-toolchain-*)"
	case !fileExists(filepath.Join(toolchain, ".installed")):
		f.Found = "not fetched yet: " + toolchain
	default:
		version, err := p.run(context.Background(), nvcc, "--version")
		if err == nil {
			lines := strings.Split(version, "\n")
			version = lines[len(lines)-1]
		}
		f.Found = toolchain + " (" + version + ")"
	}
	switch cudaBuild {
	case "yes":
		f.Means = "make build compiles the CUDA plugins with the cuda tag against it (fetched once, about 130 MB)"
	case "":
		if toolchain != "" || runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
			f.Means = "pinned for x86-64 Linux: make build fetches it and builds the CUDA plugins with CUDA"
		} else {
			f.Means = "the pinned wheels are x86-64 Linux ones: the CUDA plugins are built without CUDA here"
		}
	default:
		f.Means = "make says: " + cudaBuild
	}
	return f
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pythonProbe prints, as JSON, what the bridges need of their Python.
const pythonProbe = `import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.cuda.is_available()
except Exception as e:
    out["torch_error"] = f"{type(e).__name__}: {e}"
try:
    import triton
    out["triton"] = triton.__version__
except Exception as e:
    out["triton_error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))`

func (p machineProbe) python(ctx context.Context) []finding {
	python := bridge.Interpreter()
	out, err := p.run(ctx, python, "-c", pythonProbe)
	if err != nil {
		return []finding{{"Python", python + ": does not run (" + err.Error() + ")",
			"pytorch-sdpa, triton and py: files are unavailable; make setup makes .venv"}}
	}
	var got struct {
		Python, Torch, Triton string
		CUDA                  bool
		TorchError            string `json:"torch_error"`
		TritonError           string `json:"triton_error"`
	}
	_ = json.Unmarshal([]byte(out), &got) // fields are matched case-insensitively
	raw := map[string]string{"torch_error": got.TorchError, "triton_error": got.TritonError}
	fs := []finding{{"Python", python + " " + got.Python, "the Python bridges' worker"}}
	if got.Torch == "" {
		fs = append(fs, finding{"torch", "missing: " + raw["torch_error"], "pytorch-sdpa and triton are unavailable; make setup installs it"})
	} else {
		where := "CPU only"
		if got.CUDA {
			where = "CUDA available"
		}
		fs = append(fs, finding{"torch", got.Torch + ", " + where, "pytorch-sdpa runs on the " + map[bool]string{true: "GPU", false: "CPU"}[got.CUDA]})
	}
	if got.Triton == "" {
		fs = append(fs, finding{"triton", "missing: " + raw["triton_error"], "the triton backend is unavailable"})
	} else {
		means := "triton runs its kernels on the GPU"
		if !got.CUDA {
			means = "triton runs under its CPU interpreter (slow, small shapes)"
		}
		fs = append(fs, finding{"triton", got.Triton, means})
	}
	return fs
}

func (p machineProbe) tool(ctx context.Context, name, present, missing string) finding {
	path, err := exec.LookPath(name)
	if err != nil {
		return finding{name, "not on PATH", missing}
	}
	version, _ := p.run(ctx, path, "--version")
	lines := strings.Split(version, "\n")
	return finding{name, path + " (" + strings.TrimSpace(lines[len(lines)-1]) + ")", present}
}
