package bridge

import (
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the worker in its own process group, so killGroup ends the
// compilers it may have started too, and has the kernel kill it if the
// plugin dies first.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the worker's process group.
func killGroup(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
