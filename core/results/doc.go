// Package results is the JSON file a run leaves behind: the one record of
// what was measured, from which every table is drawn again later.
//
// Where to start: Run is the whole file. Its Results hold one Result per
// table row (a backend variant on one case), and each Result carries its
// verdict (Status), its correctness check (CheckResult) and its timings
// (Timing, one per L2 mode, each with Stats of kernel and call time).
//
// The runner writes the file through a Writer after every row, so a run
// that is interrupted still leaves a valid file with the rows done so far:
//
//  1. NewWriter(path) once, when the run starts;
//  2. Save(run) after every row; each Save replaces the file atomically
//     (temporary file in the same directory, fsync, rename);
//  3. Load(path) reads a file back and refuses one written under a schema
//     version this build does not know.
//
// JSON cannot carry NaN or infinities. The figures that can be non-finite
// (Stats, CheckResult and Derived) are written as null instead, and null
// reads back as NaN. docs/results-schema.md describes every field and unit.
package results
