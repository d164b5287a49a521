// Package cudatest holds what only the CUDA plugins' tests need; output
// correctness is not here but in the conformance kit, which every plugin
// runs as a real plugin process.
//
// Where to start: Conformance gives the kit's options for a CUDA plugin
// (the facts every case records, the timing method). CheckPlans and
// CheckBuildOutputsAreCurrent need no GPU; Timing (cuda tag, on a GPU) logs
// kernel times in process.
package cudatest
