package runner

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// row is one line of every case's table: a backend variant with one choice
// of tunables.
type row struct {
	backend  *backend
	variant  sdk.Variant
	tunables map[string]string
	label    string
	// tuned, when set, gives the row's tunables case by case (forCase).
	tuned *suite.Tuned
}

// forCase is the row as it runs on one case: a tuned row takes that case's
// configuration, or the backend's defaults where the file has none, and
// tunables that do not apply to the case's op (sdk.Tunable.Ops) leave the
// request and the label.
func (rw row) forCase(c op.Case) row {
	if rw.tuned != nil {
		rw.tunables = rw.tuned.For(c.ID)
		rw.label = label(rw.variant.Name, rw.tunables)
	}
	if applicable := sdk.ApplicableTunables(rw.variant.Tunables, c.Op, rw.tunables); len(applicable) < len(rw.tunables) {
		rw.tunables = applicable
		rw.label = label(rw.variant.Name, rw.tunables)
	}
	return rw
}

// caseRows are the rows as they run on one case, in plan order: each row
// of rows as forCase makes it, less a row whose tunables differ from an
// earlier row's only in tunables that do not apply to the case's op. Such
// rows run the same kernel, so the case runs it once, on the first.
func caseRows(c op.Case, rows []row) []row {
	out := make([]row, 0, len(rows))
	first := make(map[string]row, len(rows)) // by backend and label on the case
	for _, rw := range rows {
		onCase := rw.forCase(c)
		key := rw.backend.plugin.Name + "\x00" + onCase.label
		earlier, seen := first[key]
		if seen && !maps.Equal(earlier.tunables, rw.tunables) {
			continue
		}
		if !seen {
			first[key] = rw
		}
		out = append(out, onCase)
	}
	return out
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
			if sel.Tuned != nil && sel.Tuned.Variant == v.Name {
				if err := checkTuned(b.plugin.Name, v, sel.Tuned); err != nil {
					return nil, err
				}
				rows = append(rows, row{backend: b, variant: v, label: v.Name, tuned: sel.Tuned})
				continue
			}
			combos, err := TunableCombos(b.plugin.Name, v, sel)
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

// TunableCombos is the product of the values the suite asks for, a row
// each: Tunables the suite does not mention are left to the backend's
// default, which the backend applies itself.
func TunableCombos(backendName string, v sdk.Variant, sel suite.BackendSelection) ([]map[string]string, error) {
	if len(sel.Configs) > 0 {
		for _, c := range sel.Configs {
			if err := checkTunables(backendName, v, c); err != nil {
				return nil, err
			}
		}
		return sel.Configs, nil
	}
	combos := []map[string]string{nil}
	names := make([]string, 0, len(sel.Tunables))
	for name := range sel.Tunables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var next []map[string]string
		for _, value := range sel.Tunables[name] {
			if err := checkTunables(backendName, v, map[string]string{name: value}); err != nil {
				return nil, err
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

// checkTuned checks every configuration of a tuned file against the
// variant's declared tunables.
func checkTuned(backendName string, v sdk.Variant, t *suite.Tuned) error {
	for _, c := range t.Cases {
		if err := checkTunables(backendName, v, c.Tunables); err != nil {
			return fmt.Errorf("%s, case %s: %w", t.Path, c.ID, err)
		}
	}
	return nil
}

// checkTunables checks one set of tunables against the variant's
// declaration (sdk.ResolveTunables, the check backends apply too), for
// each op the variant runs, as the request of a case of that op will
// carry them (row.forCase).
func checkTunables(backendName string, v sdk.Variant, tunables map[string]string) error {
	names := v.Ops
	if len(names) == 0 {
		names = []string{ops.Default}
	}
	for _, name := range names {
		if _, err := sdk.ResolveTunables(v.Tunables, name, sdk.ApplicableTunables(v.Tunables, name, tunables)); err != nil {
			return fmt.Errorf("backend %s variant %s: %w", backendName, v.Name, err)
		}
	}
	return nil
}

func label(variant string, tunables map[string]string) string { return sdk.RowLabel(variant, tunables) }
