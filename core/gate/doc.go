// Package gate judges a run against the limits of a suite's [gates] table:
// the seeds' correctness, determinism, stability and resource gates, as
// one verdict per row and gate. It measures nothing; every figure it
// judges was read from the results.Run (docs/loop.md). Start at Judge.
//
//  1. each row of the run is judged on every gate its figures allow:
//     correctness from the checker's verdict, determinism and stability
//     from the repeated checked runs (results.Repeats) and the row's
//     status, resources from the facts a CUDA backend recorded for the
//     function it launched;
//  2. a gate whose figure the row lacks (a skipped row, a backend that
//     records no registers) is not judged, and says so;
//  3. every FAIL becomes a Failure naming backend, case, figure and limit.
//
// core/report/runreport draws the Outcome as a table (WriteGates).
package gate
