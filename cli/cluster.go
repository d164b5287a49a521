package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flashcore/bench/core/cluster"
)

// clusterCommand runs the commands that take a suite beyond one process:
// merge, and the job files for Slurm and Kubernetes (docs/cluster.md).
func clusterCommand(cmd string, args []string, stdout, stderr io.Writer) error {
	switch cmd {
	case "slurm":
		return slurmCommand(args, stdout, stderr)
	case "k8s":
		return k8sCommand(args, stdout, stderr)
	}
	return mergeCommand(args, stdout, stderr)
}

// jobFlags are the flags Slurm and Kubernetes share.
type jobFlags struct {
	suite, backends, seed, out, flashcore *string
	shards                                *int
}

func addJobFlags(fs *flag.FlagSet, defaultOut, defaultFlashcore string) jobFlags {
	return jobFlags{
		suite:     fs.String("suite", "", "suite TOML file, as the nodes see it (required)"),
		shards:    fs.Int("shards", 0, "number of shards: array tasks or pods (required)"),
		backends:  fs.String("backends", "", "backends to run, as for flashcore run"),
		seed:      fs.String("seed", "", "input seed, as for flashcore run"),
		out:       fs.String("out", defaultOut, "directory the job files are written to"),
		flashcore: fs.String("flashcore", defaultFlashcore, "the flashcore binary, as the nodes see it"),
	}
}

func (f jobFlags) job(gpus int, dir string) cluster.Job {
	var runArgs []string
	if *f.backends != "" {
		runArgs = append(runArgs, "--backends", *f.backends)
	}
	if *f.seed != "" {
		runArgs = append(runArgs, "--seed", *f.seed)
	}
	name := strings.TrimSuffix(filepath.Base(*f.suite), filepath.Ext(*f.suite))
	return cluster.Job{Name: name, Flashcore: *f.flashcore, Suite: *f.suite, Shards: *f.shards, GPUs: gpus, RunArgs: runArgs, Dir: dir}
}

func slurmCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slurm", flag.ContinueOnError)
	self, _ := os.Executable()
	jf := addJobFlags(fs, "flashcore-slurm", self)
	gpus := fs.Int("gpus-per-task", 1, "GPUs per array task; 0 for CPU backends only; above 1 the task uses --devices all")
	partition := fs.String("partition", "", "Slurm partition (default: the cluster's)")
	limit := fs.String("time", "", "time limit per task, e.g. 01:00:00 (default: the partition's)")
	if err := noPositional(fs, args, stderr); err != nil {
		return err
	}
	dir, err := filepath.Abs(*jf.out)
	if err != nil {
		return withCode(ExitOther, err)
	}
	job := jf.job(*gpus, dir)
	if err := job.ValidateSlurm(); err != nil {
		return withCode(ExitUsage, err)
	}
	// The nodes run from the job's directory, so relative paths are made
	// absolute: the cluster must share them (a network file system).
	if job.Suite, err = filepath.Abs(job.Suite); err != nil {
		return withCode(ExitOther, err)
	}
	if _, err := loadSuite(job.Suite); err != nil {
		return withCode(ExitUsage, err)
	}
	files := cluster.Slurm(job, cluster.SlurmOptions{Partition: *partition, Time: *limit})
	if err := writeFiles(dir, map[string]string{"array.sbatch": files.Array, "merge.sbatch": files.Merge, "submit.sh": files.Submit}); err != nil {
		return withCode(ExitOther, err)
	}
	fmt.Fprintf(stdout, "wrote %s/{array.sbatch,merge.sbatch,submit.sh}: %d shard(s)\nsubmit with: sh %s\n",
		dir, job.Shards, filepath.Join(dir, "submit.sh"))
	return nil
}

func k8sCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("k8s", flag.ContinueOnError)
	jf := addJobFlags(fs, "flashcore-k8s", "flashcore")
	image := fs.String("image", "", "container image with flashcore, its plugins and the suite (required)")
	claim := fs.String("claim", "flashcore-results", "PersistentVolumeClaim (ReadWriteMany) the shards are written to")
	gpus := fs.Int("gpus-per-pod", 1, "nvidia.com/gpu limit per pod; 0 for CPU backends only")
	results := fs.String("results-dir", "/results", "where the claim is mounted in the pods")
	if err := noPositional(fs, args, stderr); err != nil {
		return err
	}
	job := jf.job(*gpus, *results)
	opts := cluster.K8sOptions{Image: *image, Claim: *claim}
	if err := errors.Join(job.Validate(), opts.Validate()); err != nil {
		return withCode(ExitUsage, err)
	}
	files := cluster.Kubernetes(job, opts)
	if err := writeFiles(*jf.out, map[string]string{"shards-job.yaml": files.Shards, "merge-job.yaml": files.Merge}); err != nil {
		return withCode(ExitOther, err)
	}
	fmt.Fprintf(stdout, "wrote %s/{shards-job.yaml,merge-job.yaml}: %d shard(s)\n", *jf.out, job.Shards)
	return nil
}

func noPositional(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return withCode(ExitUsage, fmt.Errorf("%s takes no arguments, only flags (got %q)", fs.Name(), positional[0]))
	}
	return nil
}

func writeFiles(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			return err
		}
	}
	return nil
}
