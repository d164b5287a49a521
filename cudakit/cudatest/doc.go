// Package cudatest holds what only the CUDA plugins' tests need; output
// correctness is not here but in the conformance kit, which every plugin
// runs as a real plugin process.
//
// Where to start: Conformance gives the kit's options for a CUDA plugin of
// this repository (it builds plugins/NAME's own main; a plugin kept
// elsewhere passes its own binary with FactsEveryCaseRecords and
// cudakit.MethodCUPTISpin). CheckPlans (attention, in every mode the
// variant declares), CheckOpPlans (for ops other than attention) and
// CheckBuildOutputsAreCurrent need no GPU (OpCaseOf is the case a plan
// gets, for a plugin's own plan tests); Timing logs attention forward
// kernel times in process, and CheckOp checks and times cases of another
// op, or of attention in a mode such as bwd (ModeCases), in process, by
// the rules the conformance kit holds a plugin binary to (both with the
// cuda tag, on a GPU).
package cudatest
