// Package golden compares test output with golden files, for the tests of
// the report packages: one -update flag and one way of showing a
// difference.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Update is the -update flag: rewrite the golden files instead of
// comparing with them.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Compare checks got against the golden file, or rewrites it with
// -update. On a mismatch it writes a .got file and shows where they differ.
func Compare(t testing.TB, golden string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gotPath := strings.TrimSuffix(golden, ".golden") + ".got"
	os.WriteFile(gotPath, got, 0o644)
	t.Errorf("output differs from %s (got written to %s; rerun with -update to accept):\n%s",
		golden, gotPath, LineDiff(string(want), string(got)))
}

// LineDiff lists the lines that differ, at most ten.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&out, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
			shown++
		}
	}
	return out.String()
}
