// Command flashcore-backend-cuda-hopper is the cuda-hopper plugin: forward
// attention for Hopper (sm_90a) with wgmma, an mbarrier-synchronised K/V
// ring and producer/consumer warpgroups.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
