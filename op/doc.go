// Package op holds what every operation FlashCore bench measures has in
// common, as data: the axes a case is written in, the tensors it reads and
// writes, a case, its inputs, the tolerance an output is held to, and the
// work one call does.
//
// Start with Spec: an op declares its axes (Axis), its input and output
// tensors with shapes written in axis names (Tensor), and which roof its
// throughput is measured against (Roof). A Case is one point of those
// axes (Params) under one input distribution. The behaviour of each op,
// its reference, check and work model, lives in package ops, which lists
// every op the harness knows.
//
// This package imports nothing of the harness but the SDK's element
// types, so the suite decoder, the runner, the results and the reports can
// all speak of cases without knowing which op they belong to.
package op
