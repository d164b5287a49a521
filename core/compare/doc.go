// Package compare sets two or more results files side by side: a regression
// table (old run against new run) or an ablation table (one column per
// version of a kernel). It never measures anything; every figure it prints
// was read from the runs.
//
// Where to start: Compare. It returns data only (a Comparison); drawing
// it is core/report/comparereport's Render, with the one table renderer
// (core/report/table) every table flashcore prints goes through. Compare
// works in five steps:
//
//  1. label each run (Options.Labels, else suite name, tool version and
//     start date) and pick the L2 mode to compare in: the first run's
//     primary mode;
//  2. matchRows pairs the rows of every run by (case ID, row name), where
//     the name is the row's label, prefixed with its backend when two
//     backends share a label; a row missing from a run is added or removed;
//  3. judge sets each later run's row against the first run's: a passing
//     row that now fails or errors is a REGRESSION and the reverse is FIXED,
//     whatever the times; two passing, timed rows are faster, slower, the
//     same or unsure by the rule in verdict.go: a Mann–Whitney U test of
//     their raw samples with a Hodges–Lehmann ratio and its 95% interval
//     (stats.CompareRatio), or, for files without samples, a fallback rule
//     on their medians and noise;
//  4. headerWarnings says what makes the runs hard to compare (other
//     devices or drivers, SM clocks apart, other timing methods, no raw
//     samples, other suites or measurement settings, other inputs for the
//     same case, unfinished runs), codeDifferences what changed in the code measured (plugin
//     builds, kernel hashes), and clockNotes and methodNotes name the rows
//     behind the clock and method warnings, so that no ratio is read
//     without them;
//  5. summarize takes, per row name and later run, the geometric mean of
//     the ratios and counts the verdicts; SummaryLine puts the counts in
//     one line for release notes.
//
// comparereport.Render writes the Comparison as a terminal table, GitHub
// Markdown (ready to paste into release notes) or CSV (one record per row
// and later run). Comparison.Failed says whether a REGRESSION or a slower
// row was found.
package compare
