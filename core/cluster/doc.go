// Package cluster writes the job files that run a suite's shards on a
// cluster: a Slurm job array with a dependent merge job (Slurm), and an
// Indexed Job with a merge Job (Kubernetes). FlashCore schedules nothing
// itself; the cluster's own engine runs `flashcore run --shard I/N` once
// per index and `flashcore merge` after. Start at Slurm and Kubernetes;
// docs/cluster.md shows them in use.
package cluster
