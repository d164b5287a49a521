// Command flashcore-backend-cuda-v8 is the cuda-v8 plugin: the seed's best
// design (48x32 tiles, WMMA, cp.async double buffering, dynamic shared
// memory), written anew.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
