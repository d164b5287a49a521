// Package host finds backend plugins and runs them as child processes.
//
// Start here: Discover lists the plugin binaries (flashcore-backend-<name>)
// in the places a user can put them; Start launches one through go-plugin
// and returns an Instance whose Backend is the plugin's sdk.Backend. The
// host never imports CUDA, Python or any backend code: everything it knows
// about a backend comes through that interface.
//
// Reliability lives here too. Each plugin runs under a reaper (reaper.go):
// the host's own binary run again in a hidden mode, which is the child
// subreaper of all the plugin starts, puts it in a cgroup of its own where
// the machine allows (cgroup.go) and gives it a scratch TMPDIR. When the
// plugin exits, is killed, or the host dies, the reaper kills every
// descendant, even those that called setsid or double-forked, and removes
// the cgroup and the scratch directory; pluginProcess (process.go) is the
// host's side of it, as go-plugin's runner. The plugin's stderr is kept
// whole in a file of the host's and its tail in a ring buffer
// (stderrlog.go), so a crash becomes a reason with the tail of what it said
// and a failed row can keep all of it;
// and a plugin that fails to start is classified into a reason a user can
// act on ("no CUDA device", "wrote to stdout before the handshake", ...).
package host
