//go:build !linux

package bridge

import (
	"os"
	"os/exec"
)

// isolate does nothing where process groups and the parent-death signal
// are not available the Linux way; the worker still exits when its request
// pipe closes.
func isolate(*exec.Cmd) {}

// killGroup kills the worker process.
func killGroup(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}
