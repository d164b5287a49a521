// Package cudakit implements sdk.Backend once for every CUDA plugin
// (cuda-scalar, cuda-wmma, cuda-v8, cuda-hopper, cuda-file). A plugin
// contributes a Spec: its name, its embedded fatbin, manifest and sources,
// its capabilities and tunables, and a plan per op it runs, which maps a
// case to a kernel function, launch geometry and parameters.
//
// The kit is public so that a Go plugin kept outside this module can use
// it: its main is sdk.Serve(func() sdk.Backend { return cudakit.New(spec) }),
// its Spec is written in the types of cudakit/gpu (Dim3, Arg, DeviceInfo),
// its kernels include cudakit/gpu/kernels/attention.cuh, and its tests may
// check its plans with cudakit/cudatest. Like every package here that
// touches CUDA, the kit is built with the cuda tag (and cgo against
// CUDA 12's cuda.h, as mk/cuda.mk does); without it, it still builds.
//
// Where to start: Spec (spec.go), then the lifecycle, one file per step
// (each with the cuda build tag; backend_nocuda.go is their twin):
//
//  1. Describe (backend_cuda.go) starts the backend once (start_cuda.go):
//     it checks the spec's ops and the embedded fatbin against its manifest
//     and sources (a stale fatbin makes the backend unavailable, never
//     measured), creates the CUDA context on a locked thread (gpu.Worker),
//     loads the kernels and the timing kernels.
//  2. Prepare (prepare_cuda.go) refuses an op the variant does not list,
//     checks the case against the capabilities and the device, plans it,
//     reads and hashes the inputs, allocates and uploads (case_cuda.go: a
//     prepared case's buffers, launches and moves).
//  3. Fetch (run_cuda.go) poisons every output, runs the kernels once and
//     writes each output.
//  4. Run (run_cuda.go) takes kernel-time samples (spin kernel, optional L2
//     flush, events around the kernels; sampler_cuda.go,
//     device_timing_cuda.go) under sdk.CollectSamples, then call-time
//     samples, and writes each output as the last timed call left it.
//  5. Release frees the case; Close the context (release_cuda.go).
//
// What the kit offers per op (ops.go):
//
//   - attention, the op of every request that names none: Spec.Plan gets
//     the request's sdk.Shape; the tensors are Q, K and V (read from
//     Files, hashed in that order) and O (written to Files.Output), sized
//     from the shape; the capability check is sdk.Capabilities.Unsupported; a Launch without
//     Params gets the standard parameter list (KernelArgs).
//   - attention in another mode (sdk.Backward, sdk.ForwardBackward; the
//     request's Shape.Mode, or its params' mode), declared in the
//     variant's Capabilities.Modes: its OpPlan in Spec.ModePlans gets an
//     OpCase with the mode's named tensors (for bwd q, k, v, o, do and lse
//     in, dq, dk and dv out; op.Spec.InputsOf and OutputsOf) and is
//     handled from there on as another op is, below: the tensors checked
//     against the declaration, a buffer each, the input hash over every
//     input in order, the capability check sdk.Capabilities.Unsupported
//     (which refuses a mode the variant does not declare). A declared mode
//     without a plan, or a plan for a mode not declared, is a CheckOps
//     problem. The mode's kernels are named by ModeKernelName
//     (attn_bwd_…). Forward stays exactly as above.
//   - any other op of the ops registry, listed in Variant.Ops: its OpPlan
//     in Spec.Ops gets an OpCase, the request's params and named tensor
//     files, after Prepare has checked them against the op's declaration
//     (names, order, dims and element types). Each input and output gets a
//     device buffer of the size its dims and dtype give, named in
//     Launch.Params by its name in the op; the input hash is over the
//     inputs in the request's order; the capability check is the op's own
//     (ops.Op.Unsupported: for rmsnorm the dtype and the size of x). A
//     Launch without Params gets a pointer to each input, then each
//     output; TensorParams adds scalars after them.
//
// Whatever the op, a plan may add scratch buffers and following kernels,
// every output is poisoned (0xFF bytes) before Fetch's call and before a
// Run's first call, the buffers move between placements, and the timing is
// the same. A case of an op the variant does not list, or of an attention
// mode it does not declare, is an Unsupported diagnostic; a Spec whose
// Variant.Ops or attention modes and its plans disagree (CheckOps) makes
// the backend unavailable. A backward plan usually launches two kernels
// (dK and dV, then dQ: Launch.Then), timed together as one call.
//
// Without the cuda build tag the Backend still describes itself, as
// unavailable ("built without CUDA").
package cudakit
