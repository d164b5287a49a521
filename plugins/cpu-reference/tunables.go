package cpureference

import (
	"cmp"
	"maps"
	"runtime"
	"slices"
	"strconv"

	"github.com/flashcore/bench/sdk"
)

// The tunables split the work of attention's passes (tiling): the forward
// (attention.go) and the backward (backward.go), in every mode, and so
// apply to attention alone: rmsnorm has no tiling. They
// are real choices with real costs on a CPU: small query tiles reread K and
// V more often, large key blocks leave the cache, and more workers than
// cores only add switching. They exist so that `flashcore tune` has a space
// to search on a machine without a GPU. None changes a bit of the
// backward's gradients; the key block changes the order of the forward's
// softmax additions.
const (
	tunableQueryRows = "query_tile_rows"
	tunableKeyRows   = "key_block_rows"
	tunableWorkers   = "workers"
	// autoWorkers is the workers value that means GOMAXPROCS.
	autoWorkers = "auto"
)

// attentionOnly is the Ops of each tunable.
var attentionOnly = []string{"attention"}

var tunables = []sdk.Tunable{
	{
		Name:        tunableQueryRows,
		Values:      []string{"8", "16", "32", "64", "128"},
		Default:     strconv.Itoa(defaultTiling.queryRows),
		Description: "query rows that share one pass over K and V (the forward, and dQ in the backward); also a goroutine's unit of work",
		Ops:         attentionOnly,
	},
	{
		Name:        tunableKeyRows,
		Values:      []string{"16", "32", "64", "128", "256"},
		Default:     strconv.Itoa(defaultTiling.keyRows),
		Description: "key rows scored before their softmax terms are folded into the running sums; in the backward also the unit of dK and dV work",
		Ops:         attentionOnly,
	},
	{
		Name:        tunableWorkers,
		Values:      []string{autoWorkers, "1", "2", "4", "8"},
		Default:     autoWorkers,
		Description: "goroutines that take tiles from a shared counter; auto is GOMAXPROCS",
		Ops:         attentionOnly,
	},
}

// tilingOf turns the tunables of a request for a case of the op of that
// name ("" is attention) into a tiling. Tunables the request leaves out
// keep their defaults; a name or value the backend does not declare, or a
// tunable of attention in a request of another op, is a reason to refuse
// the case, returned as a diagnostic.
func tilingOf(op string, requested map[string]string) (tiling, []sdk.Diagnostic) {
	t := defaultTiling
	if _, err := sdk.ResolveTunables(tunables, cmp.Or(op, "attention"), requested); err != nil {
		return t, []sdk.Diagnostic{{Severity: sdk.Unsupported, Summary: err.Error()}}
	}
	for _, name := range slices.Sorted(maps.Keys(requested)) {
		t.set(name, requested[name])
	}
	return t, nil
}

// set applies one declared value (sdk.ResolveTunables checked it).
func (t *tiling) set(name, value string) {
	if name == tunableWorkers && value == autoWorkers {
		t.workers = 0
		return
	}
	n, _ := strconv.Atoi(value) // declared values are integers
	switch name {
	case tunableQueryRows:
		t.queryRows = n
	case tunableKeyRows:
		t.keyRows = n
	case tunableWorkers:
		t.workers = n
	}
}

// facts are the tiling as the results record it.
func (t tiling) facts() map[string]string {
	workers := t.workers
	if workers <= 0 {
		workers = runtimeWorkers()
	}
	return map[string]string{
		tunableQueryRows: strconv.Itoa(t.queryRows),
		tunableKeyRows:   strconv.Itoa(t.keyRows),
		"goroutines":     strconv.Itoa(workers),
	}
}

func runtimeWorkers() int { return runtime.GOMAXPROCS(0) }
