package cudafile

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/internal/cudafile"
	"github.com/flashcore/bench/sdk"
)

const (
	// runnerName is this plugin's own name: it is no backend by itself.
	runnerName = host.CUDAFileRunner
	version    = "0.1.0"
)

// New is the backend named on the command line: the shared CUDA backend
// running the spec's kernels. It starts nothing until the first call.
func New() sdk.Backend { return newBackend(os.Args[1:]) }

func newBackend(args []string) sdk.Backend {
	name, specPath, err := parseArgs(args)
	if err != nil {
		return sdk.Unavailable(runnerName, err.Error())
	}
	spec, err := cudafile.Load(specPath)
	if err != nil {
		return sdk.Unavailable(name, err.Error())
	}
	return cudakit.New(backendSpec(name, spec, &cudafile.Compiler{}))
}

// backendSpec is what the shared CUDA backend runs for spec: its one
// variant, its plans (attention's, and one per op table), and its kernels
// compiled (or loaded) at Prepare.
func backendSpec(name string, spec *cudafile.Spec, compiler *cudafile.Compiler) cudakit.Spec {
	build := "compiled at prepare time from " + filepath.Base(spec.Source) + " with nvcc, for the device there"
	if spec.Binary != "" {
		build = "prebuilt " + filepath.Base(spec.Binary)
	}
	var modes map[sdk.Mode]cudakit.OpPlan
	if spec.Backward != nil {
		modes = map[sdk.Mode]cudakit.OpPlan{sdk.Backward: spec.BackwardPlan}
	}
	var plan func(sdk.Shape, map[string]string) (cudakit.Launch, error)
	if spec.RunsAttention() {
		plan = spec.Plan
	}
	return cudakit.Spec{
		Name:      name,
		Version:   version,
		Variant:   spec.Variant(name),
		Plan:      plan,
		ModePlans: modes,
		Ops:       spec.OpPlans(),
		Image: func(device gpu.DeviceInfo, tunables map[string]string) (cudakit.Image, error) {
			return compiler.Image(spec, device, tunables)
		},
		Build: build,
	}
}

// parseArgs reads --name and --spec, as the host passes them
// (core/host.CUDAFileArgs). The name defaults to the spec's stem; the spec
// is made absolute.
func parseArgs(args []string) (name, spec string, err error) {
	fs := flag.NewFlagSet(runnerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&name, "name", "", "the backend's name in tables")
	fs.StringVar(&spec, "spec", "", "the .toml spec that names the .cu file and says how to launch it")
	if err := fs.Parse(args); err != nil {
		return "", "", fmt.Errorf("%s: %w", runnerName, err)
	}
	if spec == "" {
		return "", "", errors.New("cuda-file runs the CUDA-file spec a suite names ([[backends]] cuda = \"kernel.toml\") or `--backends cu:kernel.toml`; it is no backend by itself")
	}
	if name == "" {
		name = host.CUDAFileName(spec)
	}
	spec, err = filepath.Abs(spec)
	return name, spec, err
}
