package tune

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// Settings are the search's parameters; they are kept in the state so a
// resumed search goes on with the ones it started with.
type Settings struct {
	// Population is the size of a generation, and how many of the best
	// configurations so far are parents of the next.
	Population int `json:"population"`
	// Tournament is how many parents compete for each parent slot.
	Tournament int `json:"tournament"`
	// CrossoverRate is the chance that a child mixes two parents rather
	// than being a mutated copy of one.
	CrossoverRate float64 `json:"crossover_rate"`
}

// DefaultSettings suit spaces of tens to a few thousand configurations and
// budgets of tens of evaluations.
func DefaultSettings() Settings {
	return Settings{Population: 8, Tournament: 2, CrossoverRate: 0.7}
}

// Evaluation is the outcome of one configuration on one case.
type Evaluation struct {
	// Index counts the search's evaluations from 1, in the order they ran.
	Index      int    `json:"index"`
	Generation int    `json:"generation"`
	Config     Config `json:"config"`
	// Accepted is true when the row PASSed and was timed: the configuration
	// competes. A rejected one has its Reason.
	Accepted bool `json:"accepted"`
	// Verdict is the row's status: pass, fail, error or skip.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// KernelNs is the median kernel time of the primary L2 mode, and
	// HalfWidthNs the 95% half-width of that median; 0 when not timed.
	KernelNs    float64 `json:"kernel_ns,omitempty"`
	HalfWidthNs float64 `json:"half_width_ns,omitempty"`
}

// Search is the search of one case.
type Search struct {
	CaseID string `json:"case_id"`
	// Generation is the number of generations drawn so far.
	Generation int `json:"generation"`
	// RNG is the random source's state after the last generation was drawn.
	RNG []byte `json:"rng"`
	// Pending are the configurations of the current generation that have
	// not been evaluated yet, in the order they will be.
	Pending     []Config     `json:"pending"`
	Evaluations []Evaluation `json:"evaluations"`
	// Exhausted is set when no configuration is left to try.
	Exhausted bool `json:"exhausted,omitempty"`
}

// newSearch starts the search of a case. Its random source is keyed by the
// seed and the case, so each case's search replays on its own.
func newSearch(caseID string, seed uint64) (*Search, error) {
	h := fnv.New64a()
	h.Write([]byte(caseID))
	rng, err := rand.NewPCG(seed, h.Sum64()).MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &Search{CaseID: caseID, RNG: rng}, nil
}

// Best returns the fastest accepted evaluation, or false when none passed.
func (s *Search) Best() (Evaluation, bool) {
	ranked := s.Ranked()
	if len(ranked) == 0 {
		return Evaluation{}, false
	}
	return ranked[0], true
}

// Ranked lists the accepted evaluations, fastest first; equal times keep
// the order they ran in.
func (s *Search) Ranked() []Evaluation {
	var out []Evaluation
	for _, e := range s.Evaluations {
		if e.Accepted {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Evaluation) int { return cmp.Compare(a.KernelNs, b.KernelNs) })
	return out
}

// Default returns the evaluation of the space's defaults, if it ran.
func (s *Search) Default(space Space) (Evaluation, bool) {
	for _, e := range s.Evaluations {
		if space.IsDefault(e.Config) {
			return e, true
		}
	}
	return Evaluation{}, false
}

// record adds the evaluation of the first pending configuration with the
// same key and removes it from Pending.
func (s *Search) record(e Evaluation) error {
	key := e.Config.Key()
	i := slices.IndexFunc(s.Pending, func(c Config) bool { return c.Key() == key })
	if i < 0 {
		return fmt.Errorf("case %s: a result for %s, which was not a pending candidate", s.CaseID, key)
	}
	s.Pending = slices.Delete(s.Pending, i, i+1)
	e.Index = len(s.Evaluations) + 1
	e.Generation = s.Generation - 1
	s.Evaluations = append(s.Evaluations, e)
	return nil
}

// draw fills Pending with the next generation, or sets Exhausted when every
// configuration has been tried.
func (s *Search) draw(space Space, settings Settings) error {
	pcg := &rand.PCG{}
	if err := pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("case %s: random source state: %w", s.CaseID, err)
	}
	rng := rand.New(pcg)
	seen := map[string]bool{}
	for _, e := range s.Evaluations {
		seen[e.Config.Key()] = true
	}
	var next []Config
	add := func(c Config) bool {
		if seen[c.Key()] {
			return false
		}
		seen[c.Key()] = true
		next = append(next, c)
		return true
	}
	if s.Generation == 0 {
		add(space.Default())
	} else {
		s.breed(rng, space, settings, add, len(next))
	}
	for len(next) < settings.Population {
		c, ok := unseen(rng, space, seen)
		if !ok {
			break
		}
		add(c)
	}
	if len(next) == 0 {
		s.Exhausted = true
	}
	s.Pending = next
	s.Generation++
	state, err := pcg.MarshalBinary()
	if err != nil {
		return err
	}
	s.RNG = state
	return nil
}

// breed makes children of the best accepted configurations until the
// generation is full or tries run out (a small neighbourhood may hold
// nothing new; random configurations fill the rest).
func (s *Search) breed(rng *rand.Rand, space Space, settings Settings, add func(Config) bool, have int) {
	parents := s.Ranked()
	if len(parents) > settings.Population {
		parents = parents[:settings.Population]
	}
	if len(parents) == 0 {
		return
	}
	pick := func() Config {
		best := rng.IntN(len(parents))
		for range settings.Tournament - 1 {
			best = min(best, rng.IntN(len(parents))) // parents are ranked: lower is faster
		}
		return parents[best].Config
	}
	for tries := 0; have < settings.Population && tries < 20*settings.Population; tries++ {
		child := pick()
		if rng.Float64() < settings.CrossoverRate {
			child = space.Crossover(rng, child, pick())
		}
		child = space.Mutate(rng, child)
		if add(child) {
			have++
		}
	}
}

// unseen draws a configuration not tried yet: by chance first, then, when
// chance keeps finding tried ones, from the list of all.
func unseen(rng *rand.Rand, space Space, seen map[string]bool) (Config, bool) {
	for range 64 {
		if c := space.Random(rng); !seen[c.Key()] {
			return c, true
		}
	}
	if space.Size() > 1<<16 {
		return nil, false
	}
	var left []Config
	for _, c := range space.All() {
		if !seen[c.Key()] {
			left = append(left, c)
		}
	}
	if len(left) == 0 {
		return nil, false
	}
	return left[rng.IntN(len(left))], true
}
