package comparereport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/compare"
	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/internal/golden"
)

// TestDocExampleIsTheOutput keeps the example in docs/compare.md what the
// command prints for the planted fixtures, saved under the names the doc
// uses. With -update it rewrites the example.
func TestCompareDocExampleIsTheOutput(t *testing.T) {
	sources := load(t, samplesBase, samplesPlanted)
	sources[0].Path, sources[1].Path = "base.json", "planted.json"
	c, err := compare.Compare(sources, compare.Options{Threshold: compare.DefaultThreshold, CPUThreshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, c, report.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "docs", "compare.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, found := strings.Cut(string(doc), "```markdown\n")
	example, after, closed := strings.Cut(rest, "```\n")
	if !found || !closed {
		t.Fatalf("%s has no ```markdown example", path)
	}
	if *golden.Update {
		if err := os.WriteFile(path, []byte(before+"```markdown\n"+out.String()+"```\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if example != out.String() {
		t.Errorf("the example in %s is not what compare prints (rerun with -update):\n%s", path, golden.LineDiff(example, out.String()))
	}
}
