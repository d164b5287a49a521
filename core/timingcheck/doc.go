// Package timingcheck is the logic of `flashcore verify-timing`: it
// checks, row by row, the kernel time a run reported against a reference
// measured apart from it, CUPTI's activity records or Nsight Compute. The
// command itself (cli) parses the flags, runs the suite and prints the
// table; everything it judges is here.
//
// Where to start: Rows. The check works in four steps:
//
//  1. the suite runs once, unprofiled, with RunEnv in the plugins'
//     environment (CUPTI asked for, Triton's autotuning cached in the
//     output directory);
//  2. Rows takes each row's median kernel time and judges it at once
//     against the CUPTI reference its run recorded, when the row comes
//     from a plugin shipped with this flashcore; rows with nothing to
//     check are SKIP, and the rest are left for ncu;
//  3. Measure runs the rows left under ncu (package underncu), one
//     session per plugin where NVTX ranges name each call's row, one per
//     row where nothing does, and judges each against ncu's median;
//  4. Figures lists the judged rows for ncu.WriteTiming, and Tally counts
//     the rows that FAILed the bound or have no figure, for the exit code.
//
// The bound, |ours − reference| ≤ max(2% of reference, 0.5 µs), is
// internal/ncu's (timing.go).
package timingcheck
