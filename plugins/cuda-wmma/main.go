// Command flashcore-backend-cuda-wmma is the cuda-wmma plugin: attention on
// tensor cores through 16x16x16 WMMA fragments, with an fp32 online softmax.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
