package tune

import (
	"math/rand/v2"
	"slices"

	"github.com/flashcore/bench/sdk"
)

// Config is one choice of every tunable of a variant.
type Config map[string]string

// Key is the configuration in the label form the tables use, keys sorted:
// "tile_n=64,kv_stages=2".
func (c Config) Key() string { return sdk.TunablesKey(c) }

// Space is what a search explores: the variant's tunables, each value
// list in the order the backend declares it (tile sizes ascending), so a
// step to a neighbouring value is a small change.
type Space struct {
	Tunables []sdk.Tunable
}

// Size is the number of configurations in the space.
func (s Space) Size() int {
	n := 1
	for _, t := range s.Tunables {
		n *= len(t.Values)
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}

// Default is the configuration of every tunable's default.
func (s Space) Default() Config {
	c := Config{}
	for _, t := range s.Tunables {
		c[t.Name] = t.Default
	}
	return c
}

// For is the space of a case of the op of that name: the tunables that
// apply to it (sdk.Tunable.Ops). A case of an op no tunable applies to has
// one configuration, the empty one.
func (s Space) For(op string) Space {
	var out Space
	for _, t := range s.Tunables {
		if t.AppliesTo(op) {
			out.Tunables = append(out.Tunables, t)
		}
	}
	return out
}

// IsDefault reports whether c sets each of its tunables to its default:
// the default configuration of the space, or of the space For the op of
// the case it was drawn for, which leaves out the tunables of other ops.
func (s Space) IsDefault(c Config) bool {
	def := s.Default()
	for k, v := range c {
		if d, ok := def[k]; !ok || d != v {
			return false
		}
	}
	return true
}

// Random draws every tunable's value uniformly.
func (s Space) Random(rng *rand.Rand) Config {
	c := Config{}
	for _, t := range s.Tunables {
		c[t.Name] = t.Values[rng.IntN(len(t.Values))]
	}
	return c
}

// All lists every configuration, in the order of the declarations; only
// for spaces small enough to list.
func (s Space) All() []Config {
	all := []Config{{}}
	for _, t := range s.Tunables {
		var next []Config
		for _, c := range all {
			for _, v := range t.Values {
				child := Config{}
				for k, val := range c {
					child[k] = val
				}
				child[t.Name] = v
				next = append(next, child)
			}
		}
		all = next
	}
	return all
}

// Crossover takes each tunable from a or b with even odds (uniform
// crossover).
func (s Space) Crossover(rng *rand.Rand, a, b Config) Config {
	c := Config{}
	for _, t := range s.Tunables {
		if rng.IntN(2) == 0 {
			c[t.Name] = a[t.Name]
		} else {
			c[t.Name] = b[t.Name]
		}
	}
	return c
}

// Mutate changes each tunable with probability 1/n (n tunables), and at
// least one. A change is a step to a neighbouring value half the time
// (tile 32 to 64) and a jump to any other value otherwise, so the search
// both refines and escapes.
func (s Space) Mutate(rng *rand.Rand, c Config) Config {
	out := Config{}
	for k, v := range c {
		out[k] = v
	}
	changeable := 0
	for _, t := range s.Tunables {
		if len(t.Values) > 1 {
			changeable++
		}
	}
	if changeable == 0 {
		return out
	}
	changed := false
	for !changed {
		for _, t := range s.Tunables {
			if len(t.Values) < 2 || rng.IntN(changeable) != 0 {
				continue
			}
			out[t.Name] = s.change(rng, t, out[t.Name])
			changed = true
		}
	}
	return out
}

func (s Space) change(rng *rand.Rand, t sdk.Tunable, value string) string {
	i := slices.Index(t.Values, value)
	if i >= 0 && rng.IntN(2) == 0 {
		step := 1
		if rng.IntN(2) == 0 {
			step = -1
		}
		j := i + step
		if j < 0 || j >= len(t.Values) {
			j = i - step
		}
		return t.Values[j]
	}
	j := rng.IntN(len(t.Values) - 1)
	if j >= i && i >= 0 {
		j++
	}
	return t.Values[j]
}
