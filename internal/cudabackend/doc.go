// Package cudabackend implements sdk.Backend once for every CUDA plugin
// (cuda-scalar, cuda-wmma, cuda-v8). A plugin contributes a Spec: its name,
// its embedded fatbin, manifest and sources, its capabilities and tunables,
// and a Plan that maps a case to a kernel function and launch geometry.
//
// Where to start: Spec (spec.go), then the lifecycle in backend_cuda.go:
//
//  1. Describe starts the backend once: it checks the embedded fatbin
//     against its manifest and sources (a stale fatbin makes the backend
//     unavailable, never measured), creates the CUDA context on a locked
//     thread (gpu.Worker), loads the kernels and the timing kernels.
//  2. Prepare checks the case against the capabilities and the device,
//     reads and hashes the inputs, allocates and uploads.
//  3. Fetch poisons the output, runs the kernel once and writes the output.
//  4. Run takes kernel-time samples (spin kernel, optional L2 flush, events
//     around the kernel) under sdk.CollectSamples, then call-time samples.
//  5. Release frees the case; Close the context.
//
// Without the cuda build tag the Backend still describes itself, as
// unavailable ("built without CUDA").
package cudabackend
