// Package report is the one renderer of flashcore: it draws a results.Run
// as tables (a terminal table, GitHub Markdown, CSV, or the run's own
// JSON), and compare's findings (RenderComparison), with one grid and one
// set of cells (package cell). It never measures anything; every
// figure it prints was read from the Run.
//
// Where to start: Render. It works in three steps:
//
//  1. buildView groups the rows by case (in the run's case order), picks
//     the baseline backend (Options.Baseline, else the suite's, else the
//     first backend with a passing row, with a note saying so) and takes
//     each row's speedup: the baseline's kernel median over the row's, in
//     the same case and the primary L2 mode;
//  2. summarize counts verdicts per row label and takes the geometric mean
//     of the speedups over the cases where both the row and the baseline
//     passed;
//  3. one writer per format turns the view into text (text.go for table
//     and markdown, csv.go); cells.go formats the numbers.
package report
