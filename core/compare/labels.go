package compare

import (
	"fmt"
	"path/filepath"
	"strings"
)

// defaultLabels names each run by its suite name, tool version and start
// date ("seed 0.2.0 2026-12-01"), falling back to the file's name when the
// run records none of them. Two runs that would share a label get their
// position appended ("seed 0.2.0 2026-12-01 #2").
func defaultLabels(sources []Source) []string {
	labels := make([]string, len(sources))
	count := map[string]int{}
	for i, s := range sources {
		labels[i] = runLabel(s)
		count[labels[i]]++
	}
	for i := range labels {
		if count[labels[i]] > 1 {
			labels[i] += fmt.Sprintf(" #%d", i+1)
		}
	}
	return labels
}

func runLabel(s Source) string {
	var parts []string
	if s.Run.Suite.Name != "" {
		parts = append(parts, s.Run.Suite.Name)
	}
	if s.Run.Tool.Version != "" {
		parts = append(parts, s.Run.Tool.Version)
	}
	if !s.Run.StartedAt.IsZero() {
		parts = append(parts, s.Run.StartedAt.UTC().Format("2006-01-02"))
	}
	if len(parts) == 0 {
		return filepath.Base(s.Path)
	}
	return strings.Join(parts, " ")
}
