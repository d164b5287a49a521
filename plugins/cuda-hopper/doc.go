// Package cudahopper is the cuda-hopper plugin: forward attention for Hopper
// (sm_90a) with wgmma, an mbarrier-synchronised K/V ring and
// producer/consumer warpgroups; and the op decode over a paged KV cache,
// as flash-decoding: a split-KV kernel (mma.sync, GQA rows packed per KV
// head, a cp.async ring of K/V tiles gathered through the block table) and,
// with more than one split, a combine kernel (decode.go, planDecode; the
// split count comes from a heuristic or the num_splits tunable).
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-hopper (go build ./plugins/cuda-hopper/...), or
// from a multi-call binary (cmd/flashcore-plugins-cuda).
package cudahopper
