package sdk

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ResolveTunables fills the declared defaults and applies the requested
// values for a case of the op of that name, rejecting unknown names,
// values that are not declared, and tunables that do not apply to the op
// (Tunable.Ops). The result holds only tunables that apply to the op. It
// is the one check of tunables: the host applies it to a suite's choices
// before any row runs, and a backend applies it to each request.
func ResolveTunables(declared []Tunable, op string, requested map[string]string) (map[string]string, error) {
	resolved := make(map[string]string, len(declared))
	byName := make(map[string]Tunable, len(declared))
	for _, t := range declared {
		byName[t.Name] = t
		if t.AppliesTo(op) {
			resolved[t.Name] = t.Default
		}
	}
	for _, name := range slices.Sorted(maps.Keys(requested)) {
		t, ok := byName[name]
		if !ok {
			known := slices.Sorted(maps.Keys(byName))
			return nil, fmt.Errorf("unknown tunable %q (this variant has: %s)", name, listOrNone(known))
		}
		if !t.AppliesTo(op) {
			return nil, fmt.Errorf("tunable %s does not apply to op %s (it applies to %s)", name, op, strings.Join(t.Ops, ", "))
		}
		if value := requested[name]; !slices.Contains(t.Values, value) {
			return nil, fmt.Errorf("tunable %s: %q is not one of %s", name, value, strings.Join(t.Values, ", "))
		}
		resolved[name] = requested[name]
	}
	return resolved, nil
}

// ApplicableTunables is requested less the tunables declared not to apply
// to the op of that name: what a request for a case of that op carries of
// a choice made for the whole variant. Names not declared stay, for
// ResolveTunables to refuse. nil when nothing is left.
func ApplicableTunables(declared []Tunable, op string, requested map[string]string) map[string]string {
	var out map[string]string
	for name, value := range requested {
		i := slices.IndexFunc(declared, func(t Tunable) bool { return t.Name == name })
		if i >= 0 && !declared[i].AppliesTo(op) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(requested))
		}
		out[name] = value
	}
	return out
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}
