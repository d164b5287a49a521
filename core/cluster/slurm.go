package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Job is what both engines need to know.
type Job struct {
	// Name names the jobs (the suite's name, usually).
	Name string
	// Flashcore is the flashcore binary as the nodes see it.
	Flashcore string
	// Suite is the suite file as the nodes see it.
	Suite string
	// Shards is the number of slices, one array task or pod each.
	Shards int
	// GPUs is the number of GPUs per task or pod; 0 asks for none (CPU
	// backends only). Above 1 each task spreads its slice over its GPUs
	// with --devices all.
	GPUs int
	// RunArgs are more `flashcore run` flags (--backends, --seed).
	RunArgs []string
	// Dir is where shard files, the merged file and logs go; the nodes
	// must share it.
	Dir string
}

// Validate checks the job before any file is written.
func (j Job) Validate() error {
	switch {
	case j.Shards < 1:
		return fmt.Errorf("--shards %d: want at least 1", j.Shards)
	case j.GPUs < 0:
		return fmt.Errorf("--gpus-per-task %d: want 0 or more", j.GPUs)
	case j.Suite == "":
		return fmt.Errorf("--suite is required: every shard must cut the same suite")
	}
	return nil
}

// ValidateSlurm adds Slurm's own limit: #SBATCH lines take no quoting,
// so the job's directory (its logs) cannot hold white space.
func (j Job) ValidateSlurm() error {
	if strings.ContainsAny(j.Dir, " \t\n") {
		return fmt.Errorf("--out %q: Slurm's #SBATCH --output cannot name a path with white space; choose another directory", j.Dir)
	}
	return j.Validate()
}

// SlurmOptions are the Slurm-only settings.
type SlurmOptions struct {
	Partition string // "" leaves it to the cluster's default
	Time      string // a Slurm time limit, e.g. "01:00:00"; "" for the default
}

// SlurmFiles are the files `flashcore slurm` writes into Job.Dir.
type SlurmFiles struct {
	Array  string // array.sbatch: one task per shard
	Merge  string // merge.sbatch: merges whatever shards were written
	Submit string // submit.sh: submits both, the merge after the array
}

// Slurm writes the job array, the merge job and the script that submits
// them, the merge with --dependency=afterany so it runs however the tasks
// ended and names the shards that are missing.
func Slurm(j Job, o SlurmOptions) SlurmFiles {
	header := func(name, log string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "#!/bin/bash\n#SBATCH --job-name=%s\n#SBATCH --output=%s\n#SBATCH --ntasks=1\n", name, log)
		if o.Partition != "" {
			fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
		}
		if o.Time != "" {
			fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
		}
		return b.String()
	}
	var array strings.Builder
	array.WriteString(header("flashcore-"+j.Name, filepath.Join(j.Dir, "logs", "shard-%a.log")))
	fmt.Fprintf(&array, "#SBATCH --array=0-%d\n", j.Shards-1)
	if j.GPUs > 0 {
		fmt.Fprintf(&array, "#SBATCH --gpus-per-task=%d\n", j.GPUs)
	}
	fmt.Fprintf(&array, "# Written by flashcore slurm: shard $SLURM_ARRAY_TASK_ID of %d.\nset -eu\n", j.Shards)
	fmt.Fprintf(&array, "exec %s run %s --shard \"$SLURM_ARRAY_TASK_ID/%d\" --out %s%s\n",
		quote(j.Flashcore), runFlags(j), j.Shards, quote(filepath.Join(j.Dir, "shard-"))+"\"$SLURM_ARRAY_TASK_ID\".json", devicesFlag(j))

	var merge strings.Builder
	merge.WriteString(header("flashcore-"+j.Name+"-merge", filepath.Join(j.Dir, "logs", "merge.log")))
	fmt.Fprintf(&merge, "# Written by flashcore slurm: merges the shards the array wrote, and names those it did not.\nset -eu\nshopt -s nullglob\n")
	fmt.Fprintf(&merge, "shards=(%s*.json)\n", quote(filepath.Join(j.Dir, "shard-")))
	fmt.Fprintf(&merge, "if [ ${#shards[@]} -eq 0 ]; then echo \"no shard wrote a results file; see %s\" >&2; exit 3; fi\n", filepath.Join(j.Dir, "logs"))
	fmt.Fprintf(&merge, "exec %s merge %s \"${shards[@]}\"\n", quote(j.Flashcore), quote(filepath.Join(j.Dir, "merged.json")))

	submit := fmt.Sprintf(`#!/bin/sh
# Written by flashcore slurm: submits the shards as a job array, then the
# merge to run after every task ended (afterany: even if some failed).
set -eu
cd %s
mkdir -p logs
array=$(sbatch --parsable array.sbatch)
array=${array%%%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" merge.sbatch)
echo "array job $array (%d task(s)), merge job ${merge%%%%;*}; merged results: %s"
`, quote(j.Dir), j.Shards, filepath.Join(j.Dir, "merged.json"))
	return SlurmFiles{Array: array.String(), Merge: merge.String(), Submit: submit}
}

func runFlags(j Job) string {
	args := append([]string{"--suite", j.Suite}, j.RunArgs...)
	for i, a := range args {
		args[i] = quote(a)
	}
	return strings.Join(args, " ")
}

func devicesFlag(j Job) string {
	if j.GPUs > 1 {
		return " --devices all"
	}
	return ""
}

// quote makes s one shell word.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
