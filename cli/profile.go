package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/underncu"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

const profileUsage = `flashcore profile: Nsight Compute's view of one row's kernels

Usage:
  flashcore profile --backend B --case CASE [--suite FILE] [--out DIR]

B is a backend (cuda-v8; its first row) or a row label: a variant
(sdpa-flash), or a row the suite's tunables make, as the run labels it
(cuda-hopper[kernel=wgmma,producer=tma]). CASE
is a case ID of the suite (default: the embedded default suite). A short
run finds the row and how it is timed; a second runs it under ncu around
its timed calls only and prints, for each kernel of one call, the tensor
pipe's activity, DRAM throughput, occupancy and its limiter, L2 hit rate,
the top warp stall reasons, registers and shared memory, and bottleneck
hints naming the metric and threshold behind each (docs/profiling.md).
The ncu report and the table are saved in DIR (default flashcore-profile).

Exit codes: 0 profiled, 2 usage or suite error, 3 the row did not run,
4 other errors (ncu missing or not allowed to read the counters), 130
interrupted.
`

// profileCallKernels is how many kernels of a bridge's calls ncu profiles:
// the first call whole, if it launches fewer.
const profileCallKernels = 8

func profileCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, profileUsage) }
	suitePath := fs.String("suite", "", "suite TOML file (default: the embedded default suite)")
	backend := fs.String("backend", "", "backend or row label to profile")
	caseID := fs.String("case", "", "case ID of the suite")
	outDir := fs.String("out", "flashcore-profile", "directory for the ncu report and the table")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *backend == "" || *caseID == "" {
		return withCode(ExitUsage, errors.New("usage: flashcore profile --backend B --case CASE [--suite FILE] [--out DIR]"))
	}
	dir, err := checkOutDir(*outDir)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	s, err := loadSuite(*suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	c, ok := s.Case(*caseID)
	if !ok {
		return withCode(ExitUsage, fmt.Errorf("case %q is not in suite %s (cases: %s)", *caseID, s.Name, caseIDs(s)))
	}
	plugin, sel, err := findRow(ctx, s, *backend)
	if err != nil {
		return err
	}
	tool, err := ncu.Find()
	if err != nil {
		return withCode(ExitOther, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return withCode(ExitOther, err)
	}
	res, reach, err := findTimedRow(ctx, s, c, plugin, sel)
	if err != nil {
		return err
	}
	return profileRow(ctx, tool, s, c, plugin, res, reach, dir, stdout)
}

// findRow resolves B to a plugin and a selection: a plugin by name, or
// the plugin that has a variant named B.
func findRow(ctx context.Context, s *suite.Suite, name string) (host.Plugin, suite.BackendSelection, error) {
	found, err := host.Discover(pluginPlaces(s))
	if err != nil {
		return host.Plugin{}, suite.BackendSelection{}, withCode(ExitOther, err)
	}
	if i := slices.IndexFunc(found, func(p host.Plugin) bool { return p.Name == name }); i >= 0 {
		return found[i], s.Selection(name), nil
	}
	var rowsOfVariant []string
	for _, p := range found {
		d := runner.Describe(ctx, p, hostOptions(s))
		if slices.ContainsFunc(d.Variants, func(v sdk.Variant) bool { return v.Name == name }) {
			sel := s.Selection(p.Name)
			sel.Variants = []string{name}
			return p, sel, nil
		}
		m := rowByLabel(d.Variants, s.Selection(p.Name), name)
		if m.found {
			return p, m.sel, nil
		}
		if len(m.rows) > 0 && m.ambiguous {
			return host.Plugin{}, suite.BackendSelection{}, withCode(ExitUsage,
				fmt.Errorf("%q matches %d rows of suite %s: %s; name one", name, len(m.rows), s.Name, listRows(m.rows)))
		}
		rowsOfVariant = append(rowsOfVariant, m.rows...)
	}
	if len(rowsOfVariant) > 0 {
		return host.Plugin{}, suite.BackendSelection{}, withCode(ExitUsage,
			fmt.Errorf("%q is no row of suite %s (its rows of that variant: %s)", name, s.Name, listRows(rowsOfVariant)))
	}
	return host.Plugin{}, suite.BackendSelection{}, withCode(ExitUsage,
		fmt.Errorf("%q is neither a backend nor a row of one (backends: %s)", name, pluginNames(found)))
}

// maxListedRows is how many rows an error of findRow names; a suite's
// sweep can make hundreds.
const maxListedRows = 12

// listRows names rows for an error: the first maxListedRows, then how many
// more.
func listRows(rows []string) string {
	if len(rows) <= maxListedRows {
		return strings.Join(rows, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(rows[:maxListedRows], ", "), len(rows)-maxListedRows)
}

// rowMatch is what rowByLabel found for a label.
type rowMatch struct {
	sel   suite.BackendSelection // the row alone, when found
	found bool
	// ambiguous: the label's tunables are part of several rows' (rows);
	// otherwise, when nothing matched, rows are the variant's rows in the
	// suite, for the error.
	ambiguous bool
	rows      []string
}

// rowByLabel finds the row labelled label among the rows the suite makes of
// the variants (one per combination of its tunables, labelled as the run
// labels them: sdk.RowLabel, "cuda-hopper[producer=tma]"), and returns
// the selection of that row alone. A label may name its tunables in any
// order and leave some out: "cuda-hopper[producer=tma]" names the one row
// of a suite that also sweeps kv_stages whose producer is tma, and is
// ambiguous where it matches several; a tunable the suite does not set
// matches the variant's default.
func rowByLabel(variants []sdk.Variant, sel suite.BackendSelection, label string) rowMatch {
	variant, want, ok := parseRowLabel(label)
	if !ok {
		return rowMatch{}
	}
	var m rowMatch
	var matched []map[string]string
	for _, v := range variants {
		if v.Name != variant {
			continue
		}
		combos, err := runner.TunableCombos(sel.Name, v, sel)
		if err != nil {
			continue
		}
		for _, combo := range combos {
			m.rows = append(m.rows, sdk.RowLabel(v.Name, combo))
			if containsTunables(combo, want, v.Tunables) {
				matched = append(matched, combo)
			}
		}
	}
	switch {
	case len(matched) == 1:
		sel.Variants = []string{variant}
		sel.Configs = []map[string]string{matched[0]}
		sel.Tunables = nil
		return rowMatch{sel: sel, found: true}
	case len(matched) > 1:
		m.ambiguous = true
		m.rows = m.rows[:0]
		for _, combo := range matched {
			m.rows = append(m.rows, sdk.RowLabel(variant, combo))
		}
	}
	return m
}

// parseRowLabel splits "variant[k=v,...]" into the variant and its
// tunables; ok is false for a label without tunables or not of that form.
func parseRowLabel(label string) (string, map[string]string, bool) {
	variant, rest, ok := strings.Cut(label, "[")
	if !ok || variant == "" || !strings.HasSuffix(rest, "]") {
		return "", nil, false
	}
	tunables := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "]"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return "", nil, false
		}
		if _, dup := tunables[k]; dup {
			return "", nil, false
		}
		tunables[k] = v
	}
	return variant, tunables, true
}

// containsTunables says whether a row (combo, the tunables its suite sets,
// the rest at the variant's defaults) has every tunable of want as want
// says.
func containsTunables(combo, want map[string]string, tunables []sdk.Tunable) bool {
	for k, v := range want {
		got, set := combo[k]
		if !set {
			i := slices.IndexFunc(tunables, func(t sdk.Tunable) bool { return t.Name == k })
			if i < 0 {
				return false
			}
			got = tunables[i].Default
		}
		if got != v {
			return false
		}
	}
	return true
}

// findTimedRow runs the case briefly, unprofiled, to learn the row's label
// and how it is timed, which says how ncu reaches it.
func findTimedRow(ctx context.Context, s *suite.Suite, c op.Case, p host.Plugin, sel suite.BackendSelection) (results.Result, ncu.Reach, error) {
	probe := underncu.CutSuite(s, sdk.L2Hot, []op.Case{c}, []suite.BackendSelection{sel})
	probe.Measurement.MinSamples, probe.Measurement.MaxSamples = 3, 3
	run, err := runner.Run(ctx, runner.Config{Suite: probe, Plugins: []host.Plugin{p}})
	if err != nil {
		return results.Result{}, ncu.Reach{}, runError(err)
	}
	if len(run.Results) > 0 {
		res := run.Results[0]
		timing, ok := res.TimingFor(sdk.L2Hot)
		if !ok {
			return res, ncu.Reach{}, withCode(ExitFailures, fmt.Errorf("%s on %s: %s: %s", res.Label, c.ID, res.Status, res.Reason))
		}
		reach, ok := ncu.ReachFor(timing.Method)
		if !ok {
			return res, ncu.Reach{}, withCode(ExitUsage, fmt.Errorf("%s is timed by %s: it runs no GPU kernel for ncu to profile", res.Label, timing.Method))
		}
		return res, reach, nil
	}
	for _, b := range run.Backends {
		if !b.Available {
			return results.Result{}, ncu.Reach{}, withCode(ExitFailures, fmt.Errorf("%s is unavailable: %s", b.Name, b.UnavailableReason))
		}
	}
	return results.Result{}, ncu.Reach{}, withCode(ExitFailures, fmt.Errorf("%s has no row for case %s", p.Name, c.ID))
}

// profileRow runs the row under ncu with the profile's sections, around
// its timed calls only, and prints the first call's kernels.
func profileRow(ctx context.Context, tool ncu.Tool, s *suite.Suite, c op.Case, p host.Plugin, res results.Result,
	reach ncu.Reach, dir string, stdout io.Writer) error {
	set := underncu.Settings{Measure: ncu.ProfileMeasure(), Limit: ncu.Limit{Count: profileCallKernels}}
	if !reach.NVTX {
		// Each call launches one attention kernel: skip the checked run's.
		set.Limit = ncu.Limit{Skip: 1, Count: 1}
	}
	sess := underncu.Session{Name: underncu.FileName(res.Label, c.ID), Plugin: p, Reach: reach, Rows: []ncu.RowKey{underncu.RowKey(res)},
		Suite: underncu.CutSuite(s, sdk.L2Hot, []op.Case{c}, []suite.BackendSelection{underncu.RowSelection(res)})}
	outcome, err := underncu.Run(ctx, tool, sess, set, dir)
	calls, report := outcome.Calls, outcome.Report
	if err != nil {
		if errors.Is(err, runner.ErrInterrupted) {
			return withCode(ExitInterrupted, err)
		}
		return withCode(ExitOther, err)
	}
	calls = ncu.CallsOf(calls, underncu.RowKey(res))
	if len(calls) == 0 {
		return withCode(ExitFailures, fmt.Errorf("ncu profiled no call of %s on %s (log: %s)", res.Label, c.ID, strings.TrimSuffix(report, ".ncu-rep")+".log"))
	}
	pc := ncu.ProfiledCall{Backend: res.Backend, Call: calls[0]}
	for _, k := range calls[0].Kernels {
		pc.Kernels = append(pc.Kernels, ncu.Profile(k))
	}
	var out bytes.Buffer
	if err := ncu.WriteProfile(&out, pc, report); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, sess.Name+".txt"), out.Bytes(), 0o644); err != nil {
		return withCode(ExitOther, err)
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

func caseIDs(s *suite.Suite) string {
	ids := make([]string, len(s.Cases))
	for i, c := range s.Cases {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}
