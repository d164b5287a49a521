// Package host finds backend plugins and runs them as child processes.
//
// Start here: Discover lists the plugin binaries (flashcore-backend-<name>)
// in the places a user can put them; Start launches one through go-plugin
// and returns an Instance whose Backend is the plugin's sdk.Backend. The
// host never imports CUDA, Python or any backend code: everything it knows
// about a backend comes through that interface.
//
// Reliability lives here too. Each plugin runs in its own process group
// with a parent-death signal, so Kill (and a killed host) leaves no
// orphans; its stderr is kept in a ring buffer so a crash becomes a reason
// with the tail of what it said; and a plugin that fails to start is
// classified into a reason a user can act on ("no CUDA device", "wrote to
// stdout before the handshake", ...).
package host
