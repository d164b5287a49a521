package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/flashcore/bench/internal/bridge"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/devices"
	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/progress"
	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/shard"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/core/timingcheck"
	"github.com/flashcore/bench/internal/ncu"
)

// DefaultResultsPath is where `flashcore run` saves the run unless --out
// says otherwise, so that no measurement is ever lost.
const DefaultResultsPath = "flashcore-results.json"

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	suitePath := fs.String("suite", "", "suite TOML file (default: the embedded default suite)")
	backends := fs.String("backends", "", "comma-separated backends to run: NAME, NAME:VARIANT or a row's name (sdpa-flash) for one row, py:FILE.py for a Python file (default: the suite's, else all found)")
	format := fs.String("format", "table", "table, markdown, csv or json")
	out := fs.String("out", DefaultResultsPath, "results JSON file, saved after every row")
	keepGoing := fs.Bool("keep-going", false, "exit 0 even when rows FAIL or plugins fail")
	seed := fs.String("seed", "", "input seed, overriding the suite's (the same seed gives the same inputs)")
	shardSpec := fs.String("shard", "", "run slice I/N of the suite's (case, backend) pairs, I from 0 (docs/cluster.md)")
	yes := fs.Bool("yes", false, fmt.Sprintf("run a suite of more than %d cases without asking", largeSuiteCases))
	devicesSpec := fs.String("devices", "", "spread the rows over GPUs: all, or indexes such as 0,1 (docs/cluster.md)")
	explainTime := fs.Bool("explain-time", false, "after the results, print where the run's time went and its slowest rows")
	auditRows := fs.Int("audit", timingcheck.DefaultAuditRows, "on a GPU, rows per backend whose timing is not flashcore's own (py: files, other plugins) measured again under ncu, chosen at random after the run, and every GPU row the host's clock alone refused; 0 turns the audit off")
	fullReference := fs.String("full-reference", runner.FullReferenceAuto, "where the harness's fp32 reference checks every row of the cases whose fp64 check samples rows: auto (the GPU, where there is one), gpu, cpu (slow) or off")
	budgetSpec := fs.String("budget", "", "stop each row's sampling at a time budget, precision traded openly: 2s per row, suite=60s for the run, or row=2s,suite=60s")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if !slices.Contains(runner.FullReferenceModes, *fullReference) {
		return withCode(ExitUsage, fmt.Errorf("--full-reference %q: want one of %s", *fullReference, strings.Join(runner.FullReferenceModes, ", ")))
	}
	if *auditRows < 0 {
		return withCode(ExitUsage, fmt.Errorf("--audit %d: want 0 (off) or more rows per backend", *auditRows))
	}
	budget, err := parseBudget(*budgetSpec)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkExplainFormat(*explainTime, report.Format(*format)); err != nil {
		return withCode(ExitUsage, err)
	}
	if err := runreport.CheckFormat(report.Format(*format)); err != nil {
		return withCode(ExitUsage, err)
	}
	s, err := loadSuite(*suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if *seed != "" {
		if s.Seed, err = strconv.ParseUint(*seed, 10, 64); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--seed %q: want a non-negative integer", *seed))
		}
	}
	slice, err := parseShard(*shardSpec)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	gpus, err := chooseDevices(ctx, *devicesSpec)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	names, variants := rowRequests(splitList(*backends))
	plugins, err := choosePlugins(s, names)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	selectVariants(s, variants)
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "flashcore: warning: %s: %s\n", s.Path, w)
	}
	if len(s.Cases) > largeSuiteCases && !*yes && *shardSpec == "" {
		return withCode(ExitUsage, largeSuiteError(s, len(plugins)))
	}
	cfg := runner.Config{
		Suite:       s,
		Plugins:     plugins,
		ResultsPath: *out,
		Tool:        results.Tool{Version: Version, GitCommit: GitCommit},
		Command:     "flashcore run " + strings.Join(args, " "),
		// A live bar when stdout and stderr are both terminals; the
		// one-line-per-row log otherwise, so that what is captured reads
		// as before. A run over several GPUs always writes lines (Progress).
		Progress:      stderr,
		NewProgress:   func(total int) progress.Reporter { return progress.For(stdout, stderr, total) },
		Budget:        budget,
		HostOptions:   host.Options{Env: timingcheck.AuditRunEnv()},
		FullReference: *fullReference,
		Python:        bridge.Interpreter(),
	}
	applyShard(&cfg, slice)
	var run *results.Run
	var runErr error
	if gpus != nil {
		run, runErr = runner.RunDevices(ctx, cfg, gpus)
	} else {
		run, runErr = runner.Run(ctx, cfg)
	}
	if runErr == nil && run != nil && *auditRows > 0 {
		runErr = auditTiming(ctx, s, run, plugins, *auditRows, *out, stderr)
	}
	if run != nil && len(run.Results)+len(run.Backends) > 0 {
		if err := runreport.Render(stdout, run, runreport.Options{Format: report.Format(*format)}); err != nil {
			return err
		}
		if err := explainTimeOf(stdout, run, *explainTime, report.Format(*format)); err != nil {
			return err
		}
		if *out != "" {
			fmt.Fprintf(stderr, "results saved to %s\n", *out)
		}
	}
	if runErr != nil {
		if errors.Is(runErr, runner.ErrInterrupted) {
			return withCode(ExitInterrupted, runErr)
		}
		return withCode(ExitOther, runErr)
	}
	if *keepGoing {
		return nil
	}
	return verdictError(run, *backends != "")
}

// auditTiming runs the timing audit (core/timingcheck, audit.go) over
// the finished run: up to perBackend random rows of each GPU backend
// whose timing is not flashcore's own, measured again under ncu. Its
// reports go beside the results file (out + ".audit"), and the results
// file is saved again with the verdicts. Without ncu, or where ncu may
// not read the counters, the run's header says the audit was not done;
// only an interrupt is an error.
func auditTiming(ctx context.Context, s *suite.Suite, run *results.Run, plugins []host.Plugin, perBackend int, out string, stderr io.Writer) error {
	self, _ := os.Executable() // "" on error: no plugin counts as shipped
	rows := timingcheck.AuditRows(run, plugins, self, perBackend, rand.New(rand.NewPCG(check.FreshSeed(), check.FreshSeed())))
	if len(rows) == 0 {
		return nil
	}
	tool, err := ncu.Find()
	flagged := 0
	if err == nil {
		dir := auditDir(out)
		if err = os.MkdirAll(dir, 0o755); err == nil {
			flagged, err = timingcheck.Audit(ctx, tool, s, run, rows, dir, stderr)
		}
	}
	if errors.Is(err, runner.ErrInterrupted) {
		return err
	}
	run.Environment.TimingAudit = timingcheck.AuditSummary(rows, flagged, perBackend, err)
	if err != nil {
		fmt.Fprintf(stderr, "flashcore: timing audit not done: %v\n", err)
	}
	if out != "" {
		return results.NewWriter(out).Save(run)
	}
	return nil
}

// auditDir is where the audit's ncu reports and logs go: beside the
// results file, or in a temporary directory when results are not saved.
func auditDir(out string) string {
	if out == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("flashcore-audit-%d", os.Getpid()))
	}
	return out + ".audit"
}

// verdictError turns the run into the exit code: ERROR rows and plugins
// that faulted before their first row first, then FAILed rows, then
// backends named on the command line that turned out unavailable. A
// backend found but unavailable for a documented reason (no CUDA device,
// built without CUDA) is not an error unless it was asked for by name.
func verdictError(run *results.Run, named bool) error {
	var failed, errored int
	for _, r := range run.Results {
		switch r.Status {
		case results.StatusFail:
			failed++
		case results.StatusError:
			errored++
		}
	}
	faulted, unavailable := backendsNotRun(run, named)
	switch {
	case len(faulted) > 0:
		return withCode(ExitFailures, fmt.Errorf("%d plugin(s) failed before their first row: %s; %d row(s) ERROR, %d FAILed",
			len(faulted), strings.Join(faulted, "; "), errored, failed))
	case errored > 0:
		return withCode(ExitFailures, fmt.Errorf("%d row(s) ended in an ERROR, %d FAILed", errored, failed))
	case failed > 0:
		return withCode(ExitFindings, fmt.Errorf("%d row(s) FAILed the correctness check", failed))
	case len(unavailable) > 0:
		return withCode(ExitUnavailable, fmt.Errorf("asked-for backend(s) unavailable: %s", strings.Join(unavailable, "; ")))
	}
	return nil
}

// backendsNotRun names, with their reasons, the plugins that faulted before
// their first row and, when the backends were named on the command line,
// those that turned out unavailable.
func backendsNotRun(run *results.Run, named bool) (faulted, unavailable []string) {
	for _, b := range run.Backends {
		switch {
		case b.Fault:
			faulted = append(faulted, b.Name+" ("+b.UnavailableReason+")")
		case !b.Available && named:
			unavailable = append(unavailable, b.Name+" ("+b.UnavailableReason+")")
		}
	}
	return faulted, unavailable
}

// parseShard reads --shard; nil when it is not given.
func parseShard(spec string) (*results.Shard, error) {
	if spec == "" {
		return nil, nil
	}
	s, err := shard.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("--shard: %w", err)
	}
	return &s, nil
}

// applyShard limits the run to one slice of the suite's (case, backend)
// pairs. Every slice is computed from the suite and the chosen backends
// alone, so N processes given the same suite and backends split the work
// without talking to each other.
func applyShard(cfg *runner.Config, s *results.Shard) {
	if s == nil {
		return
	}
	names := make([]string, len(cfg.Plugins))
	for i, p := range cfg.Plugins {
		names[i] = p.Name
	}
	cfg.Select = shard.Select(cfg.Suite.Cases, names, *s).Has
	cfg.Shard = s
}

// chooseDevices lists the GPUs --devices names; nil when it is not given.
func chooseDevices(ctx context.Context, spec string) ([]results.RowDevice, error) {
	if spec == "" {
		return nil, nil
	}
	gpus, err := devices.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("--devices %s: %w; without GPUs, run without --devices (CPU rows are never run side by side: they would share the cores they are timed on)", spec, err)
	}
	return devices.Choose(gpus, spec)
}

func loadSuite(path string) (*suite.Suite, error) {
	if path == "" {
		return suite.Default(), nil
	}
	s, err := suite.Load(path)
	if _, statErr := os.Stat(path); errors.Is(statErr, fs.ErrNotExist) {
		// No such file: a suite that ships in the binary, by name.
		if embedded, ok, embeddedErr := suite.Embedded(path); ok {
			s, err = embedded, embeddedErr
		} else if err != nil {
			err = fmt.Errorf("%w (the suites built in are %s)", err, strings.Join(suite.EmbeddedNames(), ", "))
		}
	}
	if err != nil {
		return nil, err
	}
	suiteRows(s)
	return s, checkCUDASpecs(s)
}

// suiteRows reads each [[backends]] entry of a plugin's name the way
// --backends reads its words: a row's own name ("sdpa-math") or
// "backend:variant" ("pytorch-sdpa:sdpa") becomes its backend with that
// variant, and entries of one backend merge, so a suite and the command
// line select rows alike.
func suiteRows(s *suite.Suite) {
	var kept []suite.BackendSelection
	for _, b := range s.Backends {
		if b.Python == "" && b.CUDA == "" && b.Path == "" {
			if backend, variant := splitRow(b.Name); variant != "" {
				b.Name = backend
				if len(b.Variants) == 0 {
					b.Variants = []string{variant}
				}
			}
		}
		i := slices.IndexFunc(kept, func(k suite.BackendSelection) bool {
			return k.Name == b.Name && k.Python == "" && k.CUDA == "" && len(k.Tunables) == 0 && len(b.Tunables) == 0
		})
		switch {
		case i < 0:
			kept = append(kept, b)
		case len(kept[i].Variants) == 0 || len(b.Variants) == 0:
			kept[i].Variants = nil // one of them asks for every row
		default:
			for _, v := range b.Variants {
				if !slices.Contains(kept[i].Variants, v) {
					kept[i].Variants = append(kept[i].Variants, v)
				}
			}
		}
	}
	s.Backends = kept
}

// splitRow reads one row request: "backend", "backend:variant", or a row's
// own name, which stands for the backend that owns it and that row
// ("sdpa-math" is pytorch-sdpa's). variant is "" for a whole backend; the
// py: and cu: prefixes name files, not rows.
func splitRow(r string) (backend, variant string) {
	switch prefix, rest, found := strings.Cut(r, ":"); {
	case found && prefix != "py" && prefix != "cu":
		return prefix, rest
	case !found:
		if owner, ok := runner.RowOwner(r); ok && owner != r {
			return owner, r
		}
	}
	return r, ""
}

// pluginPlaces is where plugins are looked for, first match wins: paths the
// suite names for a backend, the suite's plugin_path, $FLASHCORE_PLUGIN_PATH,
// then the directory of the flashcore binary.
func pluginPlaces(s *suite.Suite) []string {
	var places []string
	if s != nil {
		for _, b := range s.Backends {
			if b.Path != "" {
				places = append(places, b.Path)
			}
		}
		places = append(places, s.PluginPath...)
	}
	return append(places, host.DefaultPlaces()...)
}

// choosePlugins picks the plugins to start: those named on the command
// line, else those the suite lists, else every plugin found. Every backend
// the suite lists must be found even when the command line chooses others,
// so that a typo in the suite is never passed over in silence.
func choosePlugins(s *suite.Suite, requested []string) ([]host.Plugin, error) {
	found, requested, err := findPlugins(s, requested)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no backend plugins found (looked in: %s); run `make build` or set FLASHCORE_PLUGIN_PATH",
			strings.Join(pluginPlaces(s), ", "))
	}
	if err := checkSuiteBackends(s, found); err != nil {
		return nil, err
	}
	if len(requested) > 0 {
		return pick(found, requested, func(name string) error {
			return fmt.Errorf("--backends: no backend %q was found (found: %s)", name, pluginNames(found))
		})
	}
	if len(s.Backends) == 0 {
		return found, nil
	}
	var listed []string
	for _, b := range s.Backends {
		listed = append(listed, b.Name)
	}
	return pick(found, listed, nil) // checkSuiteBackends found them all
}

// checkSuiteBackends returns an error naming the file, line and key of
// each [[backends]] entry that names no backend found.
func checkSuiteBackends(s *suite.Suite, found []host.Plugin) error {
	var problems []error
	for i, b := range s.Backends {
		if !slices.ContainsFunc(found, func(p host.Plugin) bool { return p.Name == b.Name }) {
			problems = append(problems, s.UnknownBackend(i, pluginNameList(found)))
		}
	}
	return errors.Join(problems...)
}

// pick returns the plugins of names, in that order; notFound makes the
// error for a name that none is.
func pick(found []host.Plugin, names []string, notFound func(string) error) ([]host.Plugin, error) {
	var chosen []host.Plugin
	for _, name := range names {
		i := slices.IndexFunc(found, func(p host.Plugin) bool { return p.Name == name })
		if i < 0 {
			return nil, notFound(name)
		}
		chosen = append(chosen, found[i])
	}
	return chosen, nil
}

func pluginNames(ps []host.Plugin) string {
	return strings.Join(pluginNameList(ps), ", ")
}

func pluginNameList(ps []host.Plugin) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// largeSuiteCases is the most cases run starts without --yes: a sweep's
// axes multiply, and a typo in one can make a run of days.
const largeSuiteCases = 10000

// secondsPerRow is what a row costs around its kernel, measured on the
// H100 and the CPU (docs/measurement.md): about 1.5 s.
const secondsPerRow = 1.5

func largeSuiteError(s *suite.Suite, backends int) error {
	rows := len(s.Cases) * max(backends, 1)
	hours := float64(rows) * secondsPerRow / 3600
	return fmt.Errorf("%s expands to %d cases, %d rows with %d backends: about %.0f hours at %.1f s a row; "+
		"narrow its sweeps, run it in --shard slices, or pass --yes to run it all", s.Path, len(s.Cases), rows, backends, hours, secondsPerRow)
}

// rowRequests reads --backends entries that name one row rather than a
// whole backend: "BACKEND:VARIANT", or a row of this project's own
// backends by its name ("sdpa-flash" is pytorch-sdpa's). It returns the
// backends to start, in order and once each, and the variants asked of
// each; a backend named whole has none (all its rows). py: and cu: entries
// are files, passed on as they are.
func rowRequests(requested []string) (names []string, variants map[string][]string) {
	variants = map[string][]string{}
	whole := map[string]bool{}
	for _, r := range requested {
		backend, variant := splitRow(r)
		if !slices.Contains(names, backend) {
			names = append(names, backend)
		}
		if variant == "" {
			whole[backend] = true
		} else if !slices.Contains(variants[backend], variant) {
			variants[backend] = append(variants[backend], variant)
		}
	}
	for backend := range whole {
		delete(variants, backend) // named whole too: every row
	}
	return names, variants
}

// selectVariants makes the suite's selection of each backend in variants
// those variants: the command line wins over the suite.
func selectVariants(s *suite.Suite, variants map[string][]string) {
	for backend, vs := range variants {
		i := slices.IndexFunc(s.Backends, func(b suite.BackendSelection) bool { return b.Name == backend })
		if i < 0 {
			s.Backends = append(s.Backends, suite.BackendSelection{Name: backend})
			i = len(s.Backends) - 1
		}
		s.Backends[i].Variants = vs
	}
}

// parseBudget reads --budget: a duration for each row ("2s"), or
// "row=D" and "suite=D" separated by a comma; "" is no budget.
func parseBudget(spec string) (runner.Budget, error) {
	var b runner.Budget
	if spec == "" {
		return b, nil
	}
	for _, part := range strings.Split(spec, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			key, value = "row", key
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return b, fmt.Errorf("--budget %q: %q is not a positive duration such as 2s", spec, value)
		}
		switch key {
		case "row":
			b.Row = d
		case "suite":
			b.Suite = d
		default:
			return b, fmt.Errorf("--budget %q: want a duration, row=DURATION or suite=DURATION, not %q", spec, key)
		}
	}
	return b, nil
}

// checkExplainFormat refuses --explain-time with a format that is one
// machine-read document (csv, json, benchfmt, html).
func checkExplainFormat(asked bool, format report.Format) error {
	if asked && format != "" && format != report.FormatTable && format != report.FormatMarkdown {
		return fmt.Errorf("--explain-time prints tables: use --format table or markdown, not %s", format)
	}
	return nil
}

// explainTimeOf writes where the run's time went, when asked, as a
// terminal table or, with --format markdown, as Markdown.
func explainTimeOf(w io.Writer, run *results.Run, asked bool, format report.Format) error {
	if !asked {
		return nil
	}
	return runreport.WriteTimeExplanation(w, run, format == report.FormatMarkdown)
}
