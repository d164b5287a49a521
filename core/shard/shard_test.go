package shard

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want results.Shard
		err  string
	}{
		{in: "0/4", want: results.Shard{Index: 0, Count: 4}},
		{in: "3/4", want: results.Shard{Index: 3, Count: 4}},
		{in: "4/4", err: `shard "4/4": want 0 <= I < N (I counts from 0)`},
		{in: "1/0", err: `shard "1/0": want 0 <= I < N (I counts from 0)`},
		{in: "-1/2", err: `shard "-1/2": want 0 <= I < N (I counts from 0)`},
		{in: "2", err: `shard "2": want I/N, e.g. 0/4`},
		{in: "a/b", err: `shard "a/b": want I/N, e.g. 0/4`},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Parse(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func llmCases(t *testing.T) []op.Case {
	t.Helper()
	s, err := suite.Load(filepath.Join("..", "..", "suites", "llm.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return s.Cases
}

// TestAssignBalancesCost: on the llm suite, where the largest case costs
// hundreds of times the smallest, slices by count would give one slice all
// the S=16k cases; slices by cost stay within the largest unit of each
// other, and every pair is in exactly one slice.
func TestAssignBalancesCost(t *testing.T) {
	cases := llmCases(t)
	backends := []string{"pytorch-sdpa", "triton", "cuda-v8"}
	for _, n := range []int{1, 2, 3, 4, 8} {
		slicesOf := Assign(cases, backends, n)
		seen := map[Unit]int{}
		var largest, least, most float64
		least = -1
		for _, s := range slicesOf {
			for _, u := range s {
				seen[u]++
				largest = max(largest, u.Cost)
			}
			c := Cost(s)
			most = max(most, c)
			if least < 0 || c < least {
				least = c
			}
		}
		if len(seen) != len(cases)*len(backends) {
			t.Fatalf("n=%d: %d distinct pairs dealt, want %d", n, len(seen), len(cases)*len(backends))
		}
		for u, k := range seen {
			if k != 1 {
				t.Fatalf("n=%d: %v dealt %d times", n, u, k)
			}
		}
		if most-least > largest {
			t.Errorf("n=%d: slice costs %.3g to %.3g differ by more than the largest pair (%.3g)", n, least, most, largest)
		}
	}
}

func TestAssignIsDeterministic(t *testing.T) {
	cases := llmCases(t)
	backends := []string{"a", "b"}
	first := fmt.Sprint(Assign(cases, backends, 4))
	for range 5 {
		if again := fmt.Sprint(Assign(slices.Clone(cases), slices.Clone(backends), 4)); again != first {
			t.Fatal("two assignments of one suite differ")
		}
	}
}
