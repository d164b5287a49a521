package ncu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// ErrNotFound is ncu missing from PATH.
var ErrNotFound = errors.New("ncu (Nsight Compute) not found on PATH: install Nsight Compute " +
	"(it comes with the CUDA toolkit) and put the directory holding ncu on PATH")

// ErrNoPermission is ncu refused access to the GPU's performance counters.
// ErrNoKernel is a session under ncu that profiled no GPU kernel at all:
// ncu writes no report then.
var ErrNoKernel = errors.New("ncu profiled no GPU kernel")

var ErrNoPermission = errors.New("ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): " +
	"run as root, or let every user profile with the driver option " +
	"`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in a file under /etc/modprobe.d, then reboot")

// permissionMark is what ncu prints when the driver keeps the counters
// for administrators.
const permissionMark = "ERR_NVGPUCTRPERM"

// Tool is one ncu executable.
type Tool struct {
	Path string
}

// Find looks ncu up on PATH.
func Find() (Tool, error) {
	path, err := exec.LookPath("ncu")
	if err != nil {
		return Tool{}, ErrNotFound
	}
	return Tool{Path: path}, nil
}

// CheckLog reads the log ncu wrote while profiling (--log-file) and turns
// the failures a user can fix into one error; nil when there are none.
// A missing log means ncu never started.
func CheckLog(path string) error {
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ncu wrote no log to %s: it did not start", path)
	}
	if err != nil {
		return err
	}
	return checkOutput(string(text))
}

func checkOutput(text string) error {
	if strings.Contains(text, permissionMark) {
		return ErrNoPermission
	}
	return nil
}

// Import reads a report's raw page: every collected metric of every
// profiled kernel. With rename, each kernel inside an NVTX push/pop range
// is named after its innermost range, which is how calls are told apart
// (calls.go).
func (t Tool) Import(ctx context.Context, report string, rename bool) ([]Kernel, error) {
	if _, err := os.Stat(report); err != nil {
		return nil, fmt.Errorf("%w (ncu wrote no report %s)", ErrNoKernel, report)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, t.Path, ImportArgs(report, rename)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if perr := checkOutput(stdout.String() + stderr.String()); perr != nil {
			return nil, perr
		}
		return nil, fmt.Errorf("ncu --import %s: %v: %s", report, err, firstLine(stderr.String()+stdout.String()))
	}
	kernels, err := ParseRaw(&stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", report, err)
	}
	return kernels, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
