//go:build !linux

package host

import "syscall"

// reaperProcAttr starts the reaper in its own process group. The reaper
// itself (reaper.go) needs Linux: prctl, /proc and cgroups; elsewhere the
// host builds, so that its packages compile on a laptop, but a plugin's
// start fails.
func reaperProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
