package cluster

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		os.WriteFile(path+".got", []byte(got), 0o644)
		t.Errorf("%s differs (wrote .got):\n%s", path, got)
	}
}

var job = Job{Name: "llm", Flashcore: "/opt/flashcore/flashcore", Suite: "/opt/flashcore/suites/llm.toml", Shards: 4, GPUs: 1,
	RunArgs: []string{"--backends", "pytorch-sdpa,cuda-v8"}, Dir: "/shared/llm run"}

func TestSlurmFiles(t *testing.T) {
	files := Slurm(job, SlurmOptions{Partition: "gpu", Time: "01:00:00"})
	golden(t, "array.sbatch", files.Array)
	golden(t, "merge.sbatch", files.Merge)
	golden(t, "submit.sh", files.Submit)
	for name, script := range map[string]string{"array.sbatch": files.Array, "merge.sbatch": files.Merge, "submit.sh": files.Submit} {
		shell := "bash"
		if strings.HasPrefix(script, "#!/bin/sh") {
			shell = "sh"
		}
		if out, err := exec.Command(shell, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s does not parse: %v\n%s", name, err, out)
		}
	}
	if err := job.ValidateSlurm(); err == nil || !strings.Contains(err.Error(), "white space") {
		t.Errorf("a job directory with a space: %v", err)
	}
	if multi := Slurm(Job{Name: "n", Flashcore: "f", Suite: "s", Shards: 2, GPUs: 4, Dir: "/d"}, SlurmOptions{}); !strings.Contains(multi.Array, "--devices all") ||
		!strings.Contains(multi.Array, "#SBATCH --gpus-per-task=4") || strings.Contains(multi.Array, "--partition") {
		t.Errorf("4 GPUs per task:\n%s", multi.Array)
	}
}

// decodeJob decodes a manifest strictly into the Kubernetes API's own Job
// type: a misspelt or misplaced field is an error, as the API server's
// strict field validation would make it.
func decodeJob(t *testing.T, manifest string) batchv1.Job {
	t.Helper()
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(manifest), &j); err != nil {
		t.Fatalf("manifest does not decode strictly into batch/v1 Job: %v\n%s", err, manifest)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		t.Fatalf("apiVersion %q kind %q", j.APIVersion, j.Kind)
	}
	return j
}

func TestKubernetesManifestsValidate(t *testing.T) {
	files := Kubernetes(job, K8sOptions{Image: "registry.example/flashcore:1.0", Claim: "flashcore-results"})
	golden(t, "shards-job.yaml", files.Shards)
	golden(t, "merge-job.yaml", files.Merge)

	shards := decodeJob(t, files.Shards)
	spec := shards.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || *spec.Completions != 4 || *spec.Parallelism != 4 {
		t.Errorf("not an Indexed Job of 4 completions: %+v", spec)
	}
	pod := spec.Template.Spec
	c := pod.Containers[0]
	if got := c.Resources.Limits["nvidia.com/gpu"]; got.String() != "1" {
		t.Errorf("nvidia.com/gpu limit %q, want 1", got.String())
	}
	if !strings.Contains(c.Args[0], `--shard "$JOB_COMPLETION_INDEX/4"`) || c.VolumeMounts[0].MountPath != "/shared/llm run" ||
		pod.Volumes[0].PersistentVolumeClaim.ClaimName != "flashcore-results" || pod.RestartPolicy != "Never" {
		t.Errorf("pod spec: %+v", pod)
	}
	merge := decodeJob(t, files.Merge)
	if args := merge.Spec.Template.Spec.Containers[0].Args[0]; !strings.Contains(args, "merge '/shared/llm run/merged.json' '/shared/llm run/shard-'*.json") {
		t.Errorf("merge command %q", args)
	}
	if len(shards.Name) > 52 || shards.Name != "flashcore-llm" {
		t.Errorf("job name %q", shards.Name)
	}
}

// TestStrictDecodeCatchesMistakes: the validation above can fail.
func TestStrictDecodeCatchesMistakes(t *testing.T) {
	files := Kubernetes(job, K8sOptions{Image: "img", Claim: "c"})
	broken := strings.Replace(files.Shards, "completionMode: Indexed", "completionMode: Indexed\n  completionIndex: 3", 1)
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(broken), &j); err == nil {
		t.Error("an unknown field decoded")
	}
}
