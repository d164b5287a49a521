package ncu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfilingDocTables keeps docs/profiling.md's tables of figures and
// hints the ones this package uses. With -update it rewrites them.
func TestProfilingDocTables(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "profiling.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, table := range []struct{ marker, body string }{
		{"figures", figuresTable()},
		{"hints", hintsTable()},
	} {
		begin, end := "<!-- "+table.marker+" -->\n", "<!-- /"+table.marker+" -->\n"
		before, rest, found := strings.Cut(text, begin)
		current, after, closed := strings.Cut(rest, end)
		if !found || !closed {
			t.Fatalf("%s has no %s…%s block", path, strings.TrimSpace(begin), strings.TrimSpace(end))
		}
		if *update {
			text = before + begin + table.body + end + after
			continue
		}
		if current != table.body {
			t.Errorf("the %s table of %s is not the code's (rerun with -update):\n--- doc\n%s\n--- code\n%s", table.marker, path, current, table.body)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func figuresTable() string {
	var b strings.Builder
	b.WriteString("| Figure | ncu metric (the first one the report has) |\n|---|---|\n")
	for _, r := range profileReading {
		names := make([]string, len(r.Metrics))
		for i, m := range r.Metrics {
			names[i] = "`" + m + "`"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", r.Name, strings.Join(names, ", "))
	}
	b.WriteString("| Occupancy limiter | the smallest `launch__occupancy_limit_*` (blocks per SM) |\n")
	b.WriteString("| Stall 1–3 | the largest `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio` (or `smsp__average_warp_latency_issue_stalled_<reason>.ratio`), `selected` left out, with each one's share of them all |\n")
	return b.String()
}

func hintsTable() string {
	var b strings.Builder
	b.WriteString("| Hint | Reads | Fires when | Usual fix |\n|---|---|---|---|\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, r.source, r.condition(), r.advice)
	}
	return b.String()
}
