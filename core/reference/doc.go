// Package reference computes attention in float64 on the CPU: the answer
// every backend's output is checked against (docs/correctness.md).
//
// Where to start: [Rows] picks the query rows to check (every row of a
// small case, an even spread of sampled rows of a large one) and [Compute]
// computes exactly those rows. The cost is O(rows · Sk · D), so checking a
// sample of a huge case is cheap.
package reference
