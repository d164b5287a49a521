// Package ncu runs a flashcore backend under NVIDIA Nsight Compute (ncu)
// and reads what ncu measured. It is what `flashcore verify-timing`
// (core/timingcheck) and `flashcore profile` are made of; core/underncu
// runs a plugin with the command lines built here. Start at Reach.
//
// The pipeline, one step per file:
//
//  1. reach.go: how ncu gets to a backend's kernels. A Go CUDA plugin is
//     started under ncu (the plugin wrapper) and its attention kernels are
//     picked by name (attn_fwd…, the cudakit naming rule); a Python
//     bridge's worker is started under ncu (the worker wrapper) and marks
//     every timed call with an NVTX push/pop range, so ncu profiles only
//     the calls, not the sleep or the L2 flush around them.
//  2. command.go: the ncu command lines: the wrapper prefix that profiles
//     and writes a .ncu-rep report, and the import that prints the
//     report's raw page as CSV.
//  3. tool.go: finding ncu, running the import, and turning ncu's own
//     failures (not installed, ERR_NVGPUCTRPERM) into one line with the fix.
//  4. csv.go, units.go: the raw page parsed into Kernel records, every
//     metric with its value in base units (ns, bytes, %).
//  5. calls.go: kernels grouped into calls. A bridge's call can launch
//     several kernels (cuDNN SDPA: a memset and the attention); the NVTX
//     range name of each call (CallRange) keeps them together.
//  6. timing.go: our kernel figure against ncu's, with the bound
//     |ours − ncu| ≤ max(2% of ncu, 0.5 µs).
//  7. profile.go, hints.go: the metrics the optimisation loop reads
//     (tensor pipe, DRAM, occupancy and its limiter, L2 hits, stalls) and
//     the bottleneck hints, each naming its metric and threshold.
//  8. render.go: the tables a user sees.
package ncu
