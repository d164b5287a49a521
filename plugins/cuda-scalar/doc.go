// Package cudascalar is the cuda-scalar plugin: attention with an online
// softmax in plain fp32 arithmetic, no tensor cores, and rmsnorm with one
// block per row.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-scalar (go build ./plugins/cuda-scalar/...), or
// from a multi-call binary (cmd/flashcore-plugins-cuda).
package cudascalar
