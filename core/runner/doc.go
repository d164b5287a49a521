// Package runner is the host's pipeline: it takes a suite and the plugins
// to use and produces a results.Run. Start at Run.
//
// The data flow, one way, one step per package:
//
//  1. suite: the TOML suite, expanded into cases;
//  2. host: each plugin started as a process and described;
//  3. plan: rows = available backends × variants × tunable choices;
//  4. inputs: for each case, Q, K and V generated once from (seed, case)
//     and written to files every backend reads;
//  5. each row: Prepare (input hash echoed and compared), Fetch (the checked
//     run into a poisoned buffer), check against the fp64 reference, Run
//     (timed samples) once per L2 mode, Release;
//  6. stats: samples summarised, derived figures computed;
//  7. results: the run saved atomically after every row, so an interrupted
//     run leaves a valid partial file.
//
// Findings and failures stay apart: a wrong output is a "fail" row with a
// reason; a plugin that crashes, hangs or breaks the protocol is an "error"
// row with the tail of its stderr (its first compiler error line leading
// the reason, its whole stderr in the row's full_reason_file), the plugin
// is restarted for the next case, and the run goes on.
package runner
