// Package slurmtest runs `flashcore slurm` against a real Slurm: a
// one-node cluster (slurmctld, slurmd and munged, from Debian's slurm-wlm
// and munge) that the test starts on localhost and stops again. It holds
// tests only; `make test-slurm` runs them, and .ci/run installs the
// packages they need.
package slurmtest
