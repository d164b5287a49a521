// Command flashcore-backend-cuda-scalar is the cuda-scalar plugin: attention
// with an online softmax in plain fp32 arithmetic, no tensor cores, and
// rmsnorm with one block per row.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
