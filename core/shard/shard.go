package shard

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// Parse reads a shard as "I/N": slice I of N, with 0 <= I < N.
func Parse(s string) (results.Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return results.Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 0/4", s)
	}
	if count < 1 || index < 0 || index >= count {
		return results.Shard{}, fmt.Errorf("shard %q: want 0 <= I < N (I counts from 0)", s)
	}
	return results.Shard{Index: index, Count: count}, nil
}

// Unit is one (case, backend) pair: every row of one backend on one case.
// A backend's variants stay together, so that one slice times them all on
// the same inputs and machine.
type Unit struct {
	Case    string
	Backend string
	// Cost is the estimate the slices are balanced by: the case's FLOPs.
	Cost float64
}

// Assign deals the suite's (case, backend) pairs into count slices,
// balanced by cost rather than by number: the largest pair first, each to
// the slice with the least cost so far (the lowest index on a tie). The
// result depends only on the cases, the backend names and count.
func Assign(cases []op.Case, backends []string, count int) [][]Unit {
	return Deal(Units(cases, backends), count)
}

// Units are the suite's (case, backend) pairs in suite order.
func Units(cases []op.Case, backends []string) []Unit {
	units := make([]Unit, 0, len(cases)*len(backends))
	for _, c := range cases {
		for _, b := range backends {
			units = append(units, Unit{Case: c.ID, Backend: b, Cost: ops.Of(c).Work(c, nil).FLOPs})
		}
	}
	return units
}

// Deal deals units into count slices, largest cost first, each to the
// slice with the least cost so far (the lowest index on a tie).
func Deal(units []Unit, count int) [][]Unit {
	units = slices.Clone(units)
	// A stable sort keeps the given order among equal costs.
	sort.SliceStable(units, func(i, j int) bool { return units[i].Cost > units[j].Cost })
	slices := make([][]Unit, count)
	load := make([]float64, count)
	for _, u := range units {
		least := 0
		for i := 1; i < count; i++ {
			if load[i] < load[least] {
				least = i
			}
		}
		slices[least] = append(slices[least], u)
		load[least] += u.Cost
	}
	return slices
}

// Selection is one slice's pairs, for the runner to filter its rows by.
type Selection map[[2]string]bool

// Select is the selection of slice s.
func Select(cases []op.Case, backends []string, s results.Shard) Selection {
	sel := Selection{}
	for _, u := range Assign(cases, backends, s.Count)[s.Index] {
		sel[[2]string{u.Case, u.Backend}] = true
	}
	return sel
}

// Has reports whether the slice holds backend's rows on caseID.
func (s Selection) Has(caseID, backend string) bool { return s[[2]string{caseID, backend}] }

// Cost is the summed cost of a slice's units.
func Cost(units []Unit) float64 {
	var total float64
	for _, u := range units {
		total += u.Cost
	}
	return total
}
