package cpureference

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guidePath is docs/adding-a-backend.md, seen from this folder.
var guidePath = filepath.Join("..", "..", "docs", "adding-a-backend.md")

// excerptMarker precedes every code block of the guide that is copied from
// a file of this repository: <!-- excerpt: plugins/cpu-reference/backend.go -->
var excerptMarker = regexp.MustCompile(`^<!-- excerpt: (\S+) -->$`)

// TestGuideExcerptsMatchTheCode keeps the guide true: every line of every
// marked excerpt must appear in the named file, in the same order. A line
// "// ..." stands for lines left out; blank lines and runs of spaces are
// not compared.
func TestGuideExcerptsMatchTheCode(t *testing.T) {
	excerpts := guideExcerpts(t)
	if len(excerpts) < 10 {
		t.Fatalf("found %d excerpts in %s, want the guide's 10 or more", len(excerpts), guidePath)
	}
	for i, e := range excerpts {
		source, err := os.ReadFile(filepath.Join("..", "..", e.file))
		if err != nil {
			t.Errorf("excerpt %d: %v", i+1, err)
			continue
		}
		if missing := firstMissingLine(e.lines, comparableLines(string(source))); missing != "" {
			t.Errorf("excerpt %d (from %s): line %q is not in the code, or not in this order", i+1, e.file, missing)
		}
	}
}

type excerpt struct {
	file  string
	lines []string
}

func guideExcerpts(t *testing.T) []excerpt {
	t.Helper()
	guide, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	var excerpts []excerpt
	var current *excerpt
	inBlock := false
	scanner := bufio.NewScanner(strings.NewReader(string(guide)))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case !inBlock && excerptMarker.MatchString(line):
			current = &excerpt{file: excerptMarker.FindStringSubmatch(line)[1]}
		case strings.HasPrefix(line, "```") && !inBlock:
			inBlock = true
		case strings.HasPrefix(line, "```") && inBlock:
			inBlock = false
			if current != nil {
				excerpts = append(excerpts, *current)
				current = nil
			}
		case inBlock && current != nil:
			current.lines = append(current.lines, line)
		}
	}
	return excerpts
}

// comparableLines trims each line and collapses runs of blanks, so that
// gofmt's alignment in the code does not have to be copied into the guide.
func comparableLines(text string) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// firstMissingLine is the first excerpt line that cannot be matched, in
// order, against the code's lines; "" when all match.
func firstMissingLine(excerptLines, code []string) string {
	next := 0
	for _, line := range comparableLines(strings.Join(excerptLines, "\n")) {
		if line == "// ..." {
			continue
		}
		for next < len(code) && code[next] != line {
			next++
		}
		if next == len(code) {
			return line
		}
		next++
	}
	return ""
}
