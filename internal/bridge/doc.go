// Package bridge lets a plugin implement sdk.Backend in Python: each call is
// forwarded to one long-lived Python worker process, which does the loading,
// running and timing with torch (and triton).
//
// Where to start: New makes the Backend a plugin's main serves
// (plugins/pytorch-sdpa, plugins/triton). The flow of one plugin process:
//
//  1. The first call that needs the worker (Describe or Prepare) writes the
//     embedded Python scripts (python/: worker_main.py and the shared core
//     flashcore_worker.py with its flashcore_* modules, plus the plugin's
//     own backend module) into a
//     private temporary directory, and starts
//     `$FLASHCORE_PYTHON -u worker_main.py <module>` (python3 when the
//     variable is unset).
//  2. Host and worker talk over two extra pipes (fd 3 host→worker, fd 4
//     worker→host) in frames of a 4-byte big-endian length and a JSON body
//     (protocol.go). The worker's stdout and stderr both go to the plugin's
//     stderr, never its stdout (go-plugin's handshake owns that); the last
//     4 KB are kept so a crash error carries the traceback's tail.
//  3. The worker's first frame is a hello: ready, or why it cannot run here
//     (no torch, no triton), which Describe reports as Available=false.
//  4. Every call carries the host's context: when it ends, the worker is
//     killed and the call returns ctx.Err(). A worker that died is started
//     again at the next Prepare (or Describe).
//  5. Close ends the worker (EOF on its request pipe, then SIGKILL) and
//     removes the scripts directory.
//
// Prepare checks the request against the variant the worker described
// before the worker sees it (capabilities.go): the host's own capability
// check (ops.Unsupported) and the device's, answered as an Unsupported
// diagnostic. The worker has no copy of that check.
//
// The measurement contract (docs/measurement.md) runs inside the worker:
// flashcore_worker.py replicates sdk.CollectSamples' warm-up and stopping
// rule exactly, checked by a fixture both languages' tests read
// (testdata/stopping_rule.json). docs/bridges.md tells the whole story.
package bridge
