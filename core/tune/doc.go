// Package tune is an evolutionary search over the tunables a backend
// variant declares, one search per case of a suite. Start at Tune.
//
// The loop, per case:
//
//  1. space: the variant's tunables, each an ordered list of values; a
//     configuration picks one value of each (space.go);
//  2. generation 0: the defaults first, so every search measures what it
//     has to beat, then random configurations from a seeded source;
//  3. evaluate: each generation is one flashcore run of the case with one
//     row per configuration (core/runner: real plugin processes, the
//     measurement contract, the fp64 check). Fitness is the median kernel
//     time of the primary L2 mode. A configuration that FAILs its check
//     (a NaN output included), crashes, hangs, or is refused by the backend
//     (it cannot compile or launch it) is rejected with the row's reason;
//  4. select: the best Population passing configurations so far are the
//     parents (a (μ+λ) scheme: the best are never lost, which is the
//     elitism, and never measured twice); children come from tournaments
//     of two, uniform crossover and mutation (a step to a neighbouring
//     value or a jump to any value), and every configuration is evaluated
//     at most once (search.go);
//  5. state: after every evaluation the search's state, the random
//     source's included, is written to the state file, so an interrupted
//     search resumes where it stopped and repeats nothing (state.go);
//  6. result: the best configuration per case, written as a tuned file
//     that suites name (suite.Tuned), and a table of the top ones
//     (table.go).
//
// The same seed gives the same candidates for the same fitness values: the
// first generation is fixed by the seed alone, later ones depend on the
// measured times as well.
package tune
