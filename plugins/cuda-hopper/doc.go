// Package cudahopper is the cuda-hopper plugin: forward attention for Hopper
// (sm_90a) with wgmma, an mbarrier-synchronised K/V ring and
// producer/consumer warpgroups.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-hopper (go build ./plugins/cuda-hopper/...), or
// from a multi-call binary (cmd/flashcore-plugins-cuda).
package cudahopper
