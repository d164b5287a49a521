package runner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

// row is one line of every case's table: a backend variant with one choice
// of tunables.
type row struct {
	backend  *backend
	variant  sdk.Variant
	tunables map[string]string
	label    string
}

// plan expands the available backends into rows, honouring the suite's
// variant and tunable selections. A selection naming a variant or tunable
// the backend does not offer is an error that names the backend.
func plan(backends []*backend, selections []suite.BackendSelection) ([]row, error) {
	var rows []row
	for _, b := range backends {
		if !b.description.Available {
			continue
		}
		sel := selectionFor(b.plugin.Name, selections)
		variants, err := chooseVariants(b, sel)
		if err != nil {
			return nil, err
		}
		for _, v := range variants {
			combos, err := tunableCombos(b.plugin.Name, v, sel)
			if err != nil {
				return nil, err
			}
			for _, combo := range combos {
				rows = append(rows, row{backend: b, variant: v, tunables: combo, label: label(v.Name, combo)})
			}
		}
	}
	return rows, nil
}

func selectionFor(name string, selections []suite.BackendSelection) suite.BackendSelection {
	for _, s := range selections {
		if s.Name == name {
			return s
		}
	}
	return suite.BackendSelection{Name: name}
}

func chooseVariants(b *backend, sel suite.BackendSelection) ([]sdk.Variant, error) {
	if len(sel.Variants) == 0 {
		return b.description.Variants, nil
	}
	var chosen []sdk.Variant
	for _, name := range sel.Variants {
		i := slices.IndexFunc(b.description.Variants, func(v sdk.Variant) bool { return v.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("backend %s has no variant %q (it offers: %s)", b.plugin.Name, name, variantNames(b.description.Variants))
		}
		chosen = append(chosen, b.description.Variants[i])
	}
	return chosen, nil
}

func variantNames(vs []sdk.Variant) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// tunableCombos is the product of the values the suite asks for. Tunables
// the suite does not mention are left to the backend's default, which the
// backend applies itself.
func tunableCombos(backendName string, v sdk.Variant, sel suite.BackendSelection) ([]map[string]string, error) {
	combos := []map[string]string{nil}
	names := make([]string, 0, len(sel.Tunables))
	for name := range sel.Tunables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i := slices.IndexFunc(v.Tunables, func(t sdk.Tunable) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("backend %s variant %s has no tunable %q", backendName, v.Name, name)
		}
		var next []map[string]string
		for _, value := range sel.Tunables[name] {
			if !slices.Contains(v.Tunables[i].Values, value) {
				return nil, fmt.Errorf("backend %s tunable %s: value %q not allowed (allowed: %s)",
					backendName, name, value, strings.Join(v.Tunables[i].Values, ", "))
			}
			for _, c := range combos {
				m := map[string]string{name: value}
				for k, val := range c {
					m[k] = val
				}
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos, nil
}

func label(variant string, tunables map[string]string) string {
	if len(tunables) == 0 {
		return variant
	}
	keys := make([]string, 0, len(tunables))
	for k := range tunables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tunables[k]
	}
	return variant + "[" + strings.Join(parts, ",") + "]"
}
