// Package comparereport writes what compare.Compare found between runs: a
// terminal table, GitHub Markdown that starts with the one-line summary
// for release notes, or CSV with one record per row and later run. The
// judging is core/compare's; this package only draws it, with the tables
// (table.Draw) and cells (package cell) the run reports use.
//
// Where to start: Render. text.go writes the header and the notes,
// grids.go lays out the tables (one line per row for a pair, one column
// per run for an ablation, then the correctness changes and the summary),
// cells.go writes the cells, csv.go the records.
package comparereport
