// Package shard splits a suite's (case, backend) pairs into slices that
// separate processes, GPUs or cluster nodes run on their own, and merges
// their results files back into one. Start at Assign and Merge.
//
//  1. Parse reads "I/N" (I counts from 0, as Slurm array task IDs and
//     Kubernetes completion indexes do).
//  2. Assign deals the pairs out by estimated cost, the case's FLOPs,
//     largest first, each to the slice with the least work so far; the
//     order and the ties are fixed, so every process computes the same
//     slices from the same suite and backend list.
//  3. Merge checks that the results files belong together (suite hash,
//     seed, tool version), unions their cases and rows, refuses a row
//     present twice with different values, and names the missing slices.
package shard
