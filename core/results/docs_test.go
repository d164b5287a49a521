package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaDocExampleLoads keeps the example in docs/results-schema.md a
// file that Load accepts.
func TestSchemaDocExampleLoads(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "results-schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/results-schema.md has no ```json example")
	}
	path := filepath.Join(t.TempDir(), "example.json")
	if err := os.WriteFile(path, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(path)
	if err != nil {
		t.Fatalf("the documented example does not load: %v", err)
	}
	if len(run.Results) != 1 || run.Results[0].Status != StatusPass || run.Results[0].Timings[0].Kernel.MedianNs != 7410 ||
		run.SchemaVersion != SchemaVersion || len(run.Results[0].Timings[0].Samples.KernelNs) != 12 {
		t.Errorf("the documented example read back as %+v", run.Results)
	}
}
