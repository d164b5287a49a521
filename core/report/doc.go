// Package report is what every report of flashcore shares: a run arranged
// for reading (View) and the output formats (Format). The drawing is done
// by its sub-packages, one per kind of output:
//
//   - table draws every table flashcore prints, for a terminal or as
//     Markdown: the one renderer;
//   - cell formats the figure of one cell (times, ratios, noise), so that
//     a number reads the same everywhere;
//   - runreport writes a run as tables, Markdown, CSV, JSON, benchfmt or
//     one HTML page, and the tables of gate, roofline and ablate;
//   - comparereport writes what compare found between runs;
//   - charts draws a run's charts as SVG.
//
// None of them measures anything; every figure they print was read from a
// results.Run or from what compare or gate judged of one.
//
// Where to start: NewView. It works in three steps:
//
//  1. groupByCase groups the rows by case (in the run's case order);
//     chooseBaseline picks the baseline backend (the one asked for, else
//     the suite's, else the first backend with a passing row, with a note
//     saying so);
//  2. each case takes each row's speedup: the baseline's kernel median
//     over the row's, in the same case and the primary L2 mode;
//  3. summarize counts verdicts per row label and gathers the speedups
//     whose geometric mean the summary tables show.
package report
