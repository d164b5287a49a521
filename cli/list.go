package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

func listCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	suitePath := fs.String("suite", "", "suite whose plugin_path and python settings apply")
	listOps := fs.Bool("ops", false, "list the ops a suite can measure, with their axes and tensors, instead of the backends")
	asJSON := fs.Bool("json", false, "with --ops: print the ops as JSON")
	if _, err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *listOps {
		return printOps(stdout, ops.Specs(), *asJSON)
	}
	s, err := loadSuite(*suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	found, _, err := findPlugins(s, nil)
	if err != nil {
		return withCode(ExitOther, err)
	}
	descriptions := describeAll(ctx, found, s)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BACKEND\tAVAILABLE\tVERSION\tDEVICE\tVARIANTS / REASON")
	for i, p := range found {
		d := descriptions[i]
		if d.Available {
			fmt.Fprintf(w, "%s\tyes\t%s\t%s\t%s\n", p.Name, d.Version, deviceName(d.Device), variantList(d.Variants))
		} else {
			fmt.Fprintf(w, "%s\tno\t%s\t%s\tunavailable: %s\n", p.Name, dash(d.Version), deviceName(d.Device), d.UnavailableReason)
		}
	}
	if len(found) == 0 {
		fmt.Fprintf(w, "(no plugins found in: %s)\n", strings.Join(pluginPlaces(s), ", "))
	}
	return w.Flush()
}

// describeAll describes the plugins in parallel: the Python bridges take
// seconds to import their frameworks, and nothing is shared between them.
func describeAll(ctx context.Context, plugins []host.Plugin, s *suite.Suite) []sdk.Description {
	out := make([]sdk.Description, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = runner.Describe(ctx, p, hostOptions(s))
		}()
	}
	wg.Wait()
	runner.RefuseImpostors(plugins, out)
	return out
}

func hostOptions(s *suite.Suite) host.Options {
	var opts host.Options
	if s != nil && s.Python != "" {
		opts.Env = []string{"FLASHCORE_PYTHON=" + s.Python}
	}
	return opts
}

func deviceName(d sdk.Device) string {
	if d.Name == "" {
		return dash(d.Kind)
	}
	return d.Name
}

func variantList(vs []sdk.Variant) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printOps writes every op as data: what a suite entry's keys may be,
// what tensors a backend reads and writes, and the roof of its % peak.
func printOps(w io.Writer, specs []op.Spec, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(specs)
	}
	for i, s := range specs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", s.Name, s.Summary)
		fmt.Fprintf(w, "  axes:     %s\n", axesText(s.Axes))
		fmt.Fprintf(w, "  inputs:   %s\n", tensorsText(s.Inputs))
		fmt.Fprintf(w, "  outputs:  %s\n", tensorsText(s.Outputs))
		fmt.Fprintf(w, "  roof:     %s\n", roofText(s.Roof))
		fmt.Fprintf(w, "  py: file: def %s\n", s.Contract)
	}
	return nil
}

// axesText writes axes as a suite author reads them: a default in
// brackets, "same as" an axis after an equals sign, what a derived axis is
// after "derived:", required ones bare.
func axesText(axes []op.Axis) string {
	parts := make([]string, len(axes))
	for i, a := range axes {
		switch {
		case a.Derived != "":
			parts[i] = fmt.Sprintf("%s (derived: %s)", a.Name, a.Derived)
		case a.SameAs != "":
			parts[i] = fmt.Sprintf("%s (= %s)", a.Name, a.SameAs)
		case a.Default != "" && len(a.Values) > 0:
			parts[i] = fmt.Sprintf("%s (%s; %s)", a.Name, a.Default, strings.Join(a.Values, "|"))
		case a.Default != "":
			parts[i] = fmt.Sprintf("%s (%s)", a.Name, a.Default)
		default:
			parts[i] = a.Name
		}
	}
	return strings.Join(parts, ", ")
}

func tensorsText(tensors []op.Tensor) string {
	parts := make([]string, len(tensors))
	for i, t := range tensors {
		parts[i] = t.String()
		if when := whenText(t.When); when != "" {
			parts[i] += " (" + when + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// whenText is a tensor's When as "mode bwd|fwd+bwd", axes in order.
func whenText(when map[string][]string) string {
	var parts []string
	for _, axis := range slices.Sorted(maps.Keys(when)) {
		parts = append(parts, axis+" "+strings.Join(when[axis], "|"))
	}
	return strings.Join(parts, ", ")
}

func roofText(r op.Roof) string {
	if r == op.BandwidthRoof {
		return "bandwidth (% peak of GB/s)"
	}
	return "compute (% peak of TFLOP/s)"
}
