package host

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Isolation is what this machine lets the host enforce between plugins,
// and why not the rest. It is said once at the top of every run and kept
// in the results, never skipped in silence.
type Isolation struct {
	// Landlock is the Landlock ABI version the plugins are confined with
	// (wall.go); 0 when they are not.
	Landlock int `json:"landlock,omitempty"`
	// Cgroup is set when each plugin gets a cgroup v2 group of its own: it
	// is frozen while other backends are measured, and its CPU time is
	// read from it.
	Cgroup bool `json:"cgroup,omitempty"`
	// UIDs is set when each plugin runs as a uid of its own (users.go):
	// the host runs as root and the walls are on.
	UIDs bool `json:"uids,omitempty"`
	// NotEnforced names each wall missing, with the reason.
	NotEnforced []string `json:"not_enforced,omitempty"`
}

// String is the run header's line: "isolation: landlock (ABI 7), freezer,
// cpu accounting, a uid per plugin; not enforced: ...".
func (i Isolation) String() string {
	var on []string
	if i.Landlock > 0 {
		on = append(on, fmt.Sprintf("landlock (ABI %d)", i.Landlock))
	}
	if i.Cgroup {
		on = append(on, "freezer", "cpu accounting")
	}
	if i.UIDs {
		on = append(on, "a uid per plugin")
	}
	line := "isolation: " + strings.Join(on, ", ")
	if len(on) == 0 {
		line = "isolation: none"
	}
	if len(i.NotEnforced) > 0 {
		line += "; not enforced: " + strings.Join(i.NotEnforced, "; ")
	}
	return line
}

var (
	probeOnce      sync.Once
	probedLandlock int
	probedCgroup   error
	probedUsers    string // why root cannot give plugins uids here; "" when it can
)

// CurrentIsolation says what the walls are now: the machine is probed
// once (Landlock from the kernel, the cgroup by making and removing one),
// IsolationEnv is read on every call.
func CurrentIsolation() Isolation {
	probeOnce.Do(func() {
		probedLandlock = landlockABI()
		probedUsers = pluginUIDsUnmapped(readFile("/proc/self/uid_map"), readFile("/proc/self/gid_map"), readFile("/proc/self/setgroups"))
		if dir, err := newPluginCgroup("probe"); err != nil {
			probedCgroup = err
		} else {
			_ = removeCgroup(dir)
		}
	})
	var i Isolation
	off := os.Getenv(IsolationEnv) == "off"
	switch {
	case off:
		i.NotEnforced = append(i.NotEnforced, "landlock, freezer and a uid per plugin ("+IsolationEnv+"=off)")
	case probedLandlock == 0:
		i.NotEnforced = append(i.NotEnforced, "landlock (the kernel offers none: Linux 5.13 or later with landlock in its lsm= list)")
	default:
		i.Landlock = probedLandlock
	}
	switch {
	case probedCgroup != nil:
		i.NotEnforced = append(i.NotEnforced, "freezer and cpu accounting (no cgroup of its own for a plugin: "+probedCgroup.Error()+")")
	case !off:
		i.Cgroup = true
	}
	switch {
	case off:
	case os.Geteuid() != 0:
		// A user namespace would not help: without root, the only uid it
		// can map outside is the host's own.
		i.NotEnforced = append(i.NotEnforced, "a uid per plugin (the host does not run as root, so every plugin runs as its user; landlock keeps their files apart)")
	case probedUsers != "":
		i.NotEnforced = append(i.NotEnforced, "a uid per plugin ("+probedUsers+")")
	default:
		i.UIDs = true
	}
	return i
}
