package sdk

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ResolveTunables fills the declared defaults and applies the requested
// values, rejecting unknown names and values that are not declared. It is
// the one check of tunables: the host applies it to a suite's choices
// before any row runs, and a backend applies it to each request.
func ResolveTunables(declared []Tunable, requested map[string]string) (map[string]string, error) {
	resolved := make(map[string]string, len(declared))
	byName := make(map[string]Tunable, len(declared))
	for _, t := range declared {
		resolved[t.Name] = t.Default
		byName[t.Name] = t
	}
	for _, name := range slices.Sorted(maps.Keys(requested)) {
		t, ok := byName[name]
		if !ok {
			known := slices.Sorted(maps.Keys(byName))
			return nil, fmt.Errorf("unknown tunable %q (this variant has: %s)", name, listOrNone(known))
		}
		if value := requested[name]; !slices.Contains(t.Values, value) {
			return nil, fmt.Errorf("tunable %s: %q is not one of %s", name, value, strings.Join(t.Values, ", "))
		}
		resolved[name] = requested[name]
	}
	return resolved, nil
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}
