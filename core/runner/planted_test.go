package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

// plantedFault is one planted fault of a test plugin and the status its
// row must have in each case of the suite, in the suite's order.
type plantedFault struct {
	fault  string
	status []results.Status
}

// runPlanted runs suiteText through the host on the cpu-reference and on a
// copy of the test plugin pkg per fault (named base-FAULT), and returns the
// run and the parsed suite.
func runPlanted(t *testing.T, base, pkg, suiteName, suiteText string, faults []string) (*results.Run, *suite.Suite, []host.Plugin) {
	t.Helper()
	plugins := append(pluginCopies(t, base, pkg, faults...),
		host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")})
	s, err := suite.Parse(suiteName, []byte(suiteText))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(context.Background(), Config{
		Suite: s, Plugins: plugins, ResultsPath: filepath.Join(t.TempDir(), "results.json"),
		HostOptions: host.Options{StartTimeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return run, s, plugins
}

// checkPlanted runs the suite as runPlanted does and holds every row to
// want: the cpu-reference PASSes every case, each fault's copy has the
// status want gives it per case; and the suite's second case is checked on
// a sample of rows.
func checkPlanted(t *testing.T, base, pkg, suiteName, suiteText string, want []plantedFault) {
	t.Helper()
	var faults []string
	for _, w := range want {
		faults = append(faults, w.fault)
	}
	run, s, _ := runPlanted(t, base, pkg, suiteName, suiteText, faults)
	for _, w := range want {
		if len(w.status) != len(s.Cases) {
			t.Fatalf("%s: %d statuses for %d cases", w.fault, len(w.status), len(s.Cases))
		}
	}
	for i, c := range s.Cases {
		if r := find(run, c.ID, "cpu-reference"); r == nil || r.Status != results.StatusPass {
			t.Errorf("%s cpu-reference: %+v, want PASS", c.ID, r)
		}
		for _, w := range want {
			backend := base + "-" + w.fault
			r := find(run, c.ID, backend)
			if r == nil {
				t.Errorf("%s %s: no row", c.ID, backend)
				continue
			}
			t.Logf("%s %-28s %-5s %s", c.ID, backend, r.Status, r.Reason)
			if r.Status != w.status[i] {
				t.Errorf("%s %s: %s %q, want %s", c.ID, backend, r.Status, r.Reason, w.status[i])
			}
		}
	}
	if r := find(run, s.Cases[1].ID, "cpu-reference"); r != nil && !r.Check.Sampled {
		t.Errorf("%s: checked every row, want a sample (the suite's sampled_rows)", s.Cases[1].ID)
	}
}
