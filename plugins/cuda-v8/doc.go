// Package cudav8 is the cuda-v8 plugin: the seed's best design (48x32 tiles,
// WMMA, cp.async double buffering, dynamic shared memory), written anew.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-v8 (go build ./plugins/cuda-v8/...), or from a
// multi-call binary (cmd/flashcore-plugins-cuda).
package cudav8
