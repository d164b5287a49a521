// Package cudawmma is the cuda-wmma plugin: attention on tensor cores
// through 16x16x16 WMMA fragments, with an fp32 online softmax.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-wmma (go build ./plugins/cuda-wmma/...), or
// from a multi-call binary (cmd/flashcore-plugins-cuda).
package cudawmma
