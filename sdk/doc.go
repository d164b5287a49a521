// Package sdk is all a FlashCore bench plugin imports, and the contract the
// host and every backend share.
//
// # Start here
//
// A backend is a program whose main is one call:
//
//	func main() { sdk.Serve(New) }
//
// where New returns your Backend (backend.go) without side effects. Serve
// does the rest: the handshake with the host, gRPC with raised message
// limits, logging and the debug mode. You never see gRPC; the generated
// code is internal, and this package converts to and from it.
//
// docs/adding-a-backend.md walks through a whole plugin, and
// docs/measurement.md is the timing contract that Run must keep
// (CollectSamples in sampling.go applies its warm-up and stopping rule).
//
// # Lifecycle
//
//  1. The host starts the plugin binary. Serve checks that a host started
//     it, calls New once and answers the handshake on stdout. Keep New
//     quick: the host waits at most a minute for the handshake.
//  2. Describe: who the backend is and which variants and shapes it runs.
//     It must be cheap and must not fail on a machine without the backend's
//     hardware: report Available=false with a reason instead.
//  3. For each case, in order and never overlapping: Prepare (load the
//     input files, report their SHA-256), Fetch (poison the output, run
//     once, write the output file), Run (warm-up and timed samples),
//     Release.
//  4. When the host is done it ends the plugin; Serve then calls Close if
//     the backend implements Closer (CloseForExit instead where it
//     implements ExitCloser), and returns. A plugin that is killed
//     (the host died, or gave up on a hung call) gets no Close.
//
// # Errors, diagnostics and contexts
//
// Something the user should read about a case (an unsupported shape, a
// throttled clock) is a Diagnostic inside the response. A returned Go error
// fails the call; its text reaches the host unchanged and is shown in the
// row. Every call's ctx ends when the host cancels the call or its deadline
// passes: check it in long loops (CollectSamples does). A panic kills the
// plugin; the host reports it as a dead plugin, with the tail of stderr.
//
// # Output
//
// Stdout belongs to the handshake: printing to it before Serve breaks the
// start ("Unrecognized remote plugin message"). Log through Logger, which
// writes to stderr; the host keeps the tail of every plugin's stderr. After
// the handshake, writes to os.Stdout and os.Stderr are forwarded to the
// host too. LogLevelEnv sets the level.
//
// # Debug mode
//
// Run the plugin binary by hand with FLASHCORE_PLUGIN_DEBUG=1 (DebugEnv),
// under a debugger if you like. Instead of waiting for a host it serves at
// once and prints a line
//
//	FLASHCORE_PLUGIN_REATTACH='{"protocol":"grpc",...}'
//
// ParseReattach turns that value (of ReattachEnv) into the configuration
// with which a host attaches to the running plugin instead of starting one.
// The host leaves an attached plugin running when it exits, so one debug
// session can serve several host runs. Stop the plugin with Ctrl-C.
//
// # Host side
//
// The host starts a plugin with plugin.NewClient(ClientConfig(cmd, stderr,
// logger)) and gets its Backend from Dispense; it sees only the Backend
// interface. A call that fails because the plugin died is
// errors.Is(err, ErrPluginDied); one stopped by its context is
// errors.Is(err, context.DeadlineExceeded) or context.Canceled.
package sdk
