// Package inputs makes the tensors every backend is fed, and reads and
// writes tensors in the three dtypes.
//
// Where to start: [Draw] draws one input of any op; [Generate] builds the
// Q, K and V of an attention case; [WriteFiles] writes those for the
// plugins' tests. The generator is counter-based: every
// element's value is a pure function of (seed, case ID, tensor, element
// index), so the tensors of a case never depend on the suite around it, on
// the number of goroutines or on the order of work, and any element can be
// recomputed alone. docs/inputs.md specifies it precisely enough to
// re-implement, with test vectors this package's tests check.
//
// The dtype helpers ([Round], [Encode], [Decode], [DecodeInto], [At]) are
// what the reference and the checker use to read outputs without decoding
// more than the rows they need.
package inputs
