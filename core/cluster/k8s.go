package cluster

import (
	"fmt"
	"strings"
)

// K8sOptions are the Kubernetes-only settings.
type K8sOptions struct {
	Image string // an image holding flashcore, its plugins and the suite
	// Claim is the PersistentVolumeClaim (ReadWriteMany) the pods write
	// their shards to, mounted at Job.Dir.
	Claim string
}

// Validate checks the Kubernetes settings.
func (o K8sOptions) Validate() error {
	switch {
	case o.Image == "":
		return fmt.Errorf("--image is required: the image the pods run, holding flashcore and its plugins")
	case o.Claim == "":
		return fmt.Errorf("--claim is required: the volume claim the shards are written to")
	}
	return nil
}

// K8sFiles are the manifests `flashcore k8s` writes.
type K8sFiles struct {
	Shards string // an Indexed Job: pod I runs shard I/N
	Merge  string // a Job that merges the shards, applied once the first completes
}

// Kubernetes writes an Indexed Job whose pods each run one shard (the
// completion index, JOB_COMPLETION_INDEX, is the shard index), one GPU per
// pod through the nvidia.com/gpu limit, and a Job that merges their files
// from the shared volume.
func Kubernetes(j Job, o K8sOptions) K8sFiles {
	name := dnsName("flashcore-" + j.Name)
	run := fmt.Sprintf(`exec %s run %s --shard "$JOB_COMPLETION_INDEX/%d" --out %s"$JOB_COMPLETION_INDEX".json%s`,
		quote(j.Flashcore), runFlags(j), j.Shards, quote(j.Dir+"/shard-"), devicesFlag(j))
	merge := fmt.Sprintf(`exec %s merge %s %s*.json`, quote(j.Flashcore), quote(j.Dir+"/merged.json"), quote(j.Dir+"/shard-"))
	shards := fmt.Sprintf(`# Written by flashcore k8s: pod I of the Indexed Job runs shard I/%d.
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  labels:
    app.kubernetes.io/name: flashcore
spec:
  completionMode: Indexed
  completions: %d
  parallelism: %d
  backoffLimitPerIndex: 1
  maxFailedIndexes: %d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: flashcore
    spec:
      restartPolicy: Never
      containers:
        - name: flashcore
          image: %s
          command: ["/bin/sh", "-c"]
          args:
            - %s
%s          volumeMounts:
            - name: results
              mountPath: %s
      volumes:
        - name: results
          persistentVolumeClaim:
            claimName: %s
`, j.Shards, name, j.Shards, j.Shards, j.Shards, yamlString(o.Image), yamlString(run), gpuLimits(j.GPUs), yamlString(j.Dir), yamlString(o.Claim))
	mergeJob := fmt.Sprintf(`# Written by flashcore k8s: apply once job/%s has finished
# (kubectl wait --for=condition=complete job/%s).
apiVersion: batch/v1
kind: Job
metadata:
  name: %s-merge
  labels:
    app.kubernetes.io/name: flashcore
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: flashcore
    spec:
      restartPolicy: Never
      containers:
        - name: merge
          image: %s
          command: ["/bin/sh", "-c"]
          args:
            - %s
          volumeMounts:
            - name: results
              mountPath: %s
      volumes:
        - name: results
          persistentVolumeClaim:
            claimName: %s
`, name, name, name, yamlString(o.Image), yamlString(merge), yamlString(j.Dir), yamlString(o.Claim))
	return K8sFiles{Shards: shards, Merge: mergeJob}
}

func gpuLimits(gpus int) string {
	if gpus == 0 {
		return ""
	}
	return fmt.Sprintf("          resources:\n            limits:\n              nvidia.com/gpu: %d\n", gpus)
}

// yamlString is s as a double-quoted YAML scalar (JSON's escapes are
// YAML's).
func yamlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// dnsName makes s a valid Job name: lower case, [a-z0-9-], at most 52
// characters (the Job controller adds a suffix to pod names).
func dnsName(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
	if len(s) > 52 {
		s = s[:52]
	}
	return strings.Trim(s, "-")
}
