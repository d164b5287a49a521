// Package check compares a backend's output with the float64 reference and
// gives the verdict of a row (docs/correctness.md).
//
// Where to start: [Check]. It looks at the whole output for unwritten
// (poisoned) and non-finite elements, then compares the checked rows (all,
// or a sample of a large case; see reference.Rows) element by element and
// as a whole (relative L2 error). A wrong result is a finding, not an
// error: the Report carries a FAIL verdict with the reason a user reads.
package check
