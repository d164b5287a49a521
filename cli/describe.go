package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/internal/cudafile"
	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func describeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	suitePath := fs.String("suite", "", "suite whose plugin_path and python settings apply")
	backends := fs.String("backends", "", "comma-separated backends to describe, as run takes them (py:FILE.py, cu:SPEC.toml too)")
	positional, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	requested, _ := rowRequests(append(positional, splitList(*backends)...))
	if len(requested) == 0 {
		return withCode(ExitUsage, errors.New("usage: flashcore describe BACKEND... | --backends a,b"))
	}
	s, err := loadSuite(*suitePath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	found, names, err := findPlugins(s, requested)
	if err != nil {
		return withCode(ExitUsage, err) // a bad spec or file, as run says
	}
	for n, name := range names {
		i := slices.IndexFunc(found, func(p host.Plugin) bool { return p.Name == name })
		if i < 0 {
			return withCode(ExitUsage, fmt.Errorf("backend %q not found (found: %s)", requested[n], pluginNames(found)))
		}
		if n > 0 {
			fmt.Fprintln(stdout)
		}
		d := runner.Describe(ctx, found[i], hostOptions(s))
		one := []sdk.Description{d}
		runner.RefuseImpostors(found[i:i+1], one)
		writeDescription(stdout, found[i], withStaticVariants(found[i], one[0]))
		if found[i].CUDAFile != "" {
			writeCompiled(stdout, found[i].CUDAFile, one[0].Device, &cudafile.Compiler{})
		}
	}
	return nil
}

// withStaticVariants fills in, for a CUDA-file backend whose plugin could
// not start (no CUDA device), the variant its spec declares: capabilities
// and tunables are static there, and describe shows them on any machine.
func withStaticVariants(p host.Plugin, d sdk.Description) sdk.Description {
	if p.CUDAFile == "" || len(d.Variants) > 0 {
		return d
	}
	spec, err := cudafile.Load(p.CUDAFile)
	if err != nil {
		return d
	}
	d.Variants = []sdk.Variant{spec.Variant(p.Name)}
	d.UnavailableReason += "; the variant below is what the spec declares"
	return d
}

func writeDescription(w io.Writer, p host.Plugin, d sdk.Description) {
	fmt.Fprintf(w, "backend:   %s\n", p.Name)
	fmt.Fprintf(w, "binary:    %s\n", p.Path)
	if p.PythonFile != "" {
		fmt.Fprintf(w, "file:      %s\n", p.PythonFile)
	}
	if p.CUDAFile != "" {
		fmt.Fprintf(w, "spec:      %s\n", p.CUDAFile)
	}
	fmt.Fprintf(w, "version:   %s\n", dash(d.Version))
	if d.Build != "" {
		fmt.Fprintf(w, "build:     %s\n", d.Build)
	}
	if !d.Available {
		fmt.Fprintf(w, "available: no (%s)\n", d.UnavailableReason)
	} else {
		fmt.Fprintf(w, "available: yes\n")
	}
	writeDevice(w, d.Device)
	if len(d.Variants) == 0 && !d.Available {
		fmt.Fprintf(w, "variants:  not known here: the plugin could not start, so it could not say what it runs (its README lists its capabilities)\n")
	}
	for _, v := range d.Variants {
		writeVariant(w, v)
	}
}

func writeDevice(w io.Writer, d sdk.Device) {
	if d.Name == "" && d.Kind == "" {
		return
	}
	fmt.Fprintf(w, "device:    %s (%s)\n", d.Name, d.Kind)
	var facts []string
	add := func(format string, v any, ok bool) {
		if ok {
			facts = append(facts, fmt.Sprintf(format, v))
		}
	}
	add("compute capability %s", d.ComputeCapability, d.ComputeCapability != "")
	add("%d SMs", d.Multiprocessors, d.Multiprocessors > 0)
	add("L2 %d MiB", d.L2Bytes>>20, d.L2Bytes > 0)
	add("memory %d GiB", d.MemoryBytes>>30, d.MemoryBytes > 0)
	add("SM clock %.0f MHz", d.SMClockMHz, d.SMClockMHz > 0)
	add("peak %.0f TFLOP/s fp16", d.PeakTFLOPS, d.PeakTFLOPS > 0)
	add("peak %.0f GB/s", d.PeakGBps, d.PeakGBps > 0)
	add("%d cores", d.Cores, d.Cores > 0)
	add("driver %s", d.Driver, d.Driver != "")
	add("%s", d.Runtime, d.Runtime != "")
	if len(facts) > 0 {
		fmt.Fprintf(w, "           %s\n", strings.Join(facts, ", "))
	}
}

// writeVariant shows a variant's capabilities. A variant of attention
// alone shows them as they always read; a variant of other ops shows each
// op's under its name: for attention-like ops (decode, varlen) head dims,
// masking, grouped heads and masks too, for the others the fields every
// op reads.
func writeVariant(w io.Writer, v sdk.Variant) {
	fmt.Fprintf(w, "\nvariant %s\n", v.Name)
	if v.Description != "" {
		fmt.Fprintf(w, "  %s\n", v.Description)
	}
	if len(v.Ops) == 0 || slices.Equal(v.Ops, []string{attention.Name}) {
		writeCapabilities(w, "  ", attention.Name, v.Capabilities)
	} else {
		for _, name := range v.Ops {
			fmt.Fprintf(w, "  op %s\n", name)
			writeCapabilities(w, "    ", name, v.CapabilitiesOf(name))
		}
	}
	for _, t := range v.Tunables {
		fmt.Fprintf(w, "  tunable %s: %s (default %s", t.Name, strings.Join(t.Values, "|"), t.Default)
		if len(t.Ops) > 0 {
			// Ops left out: every op of the variant.
			fmt.Fprintf(w, "; ops: %s", strings.Join(t.Ops, ", "))
		}
		fmt.Fprint(w, ")")
		if t.Description != "" {
			fmt.Fprintf(w, " — %s", t.Description)
		}
		fmt.Fprintln(w)
	}
}

// writeCapabilities shows what a variant runs of one op, each line after
// indent.
func writeCapabilities(w io.Writer, indent, opName string, c sdk.Capabilities) {
	line := func(format string, args ...any) { fmt.Fprintf(w, indent+format+"\n", args...) }
	dtypes := make([]string, len(c.DTypes))
	for i, d := range c.DTypes {
		dtypes[i] = string(d)
	}
	line("dtypes:       %s", strings.Join(dtypes, ", "))
	if opName == attention.Name {
		line("head dims:    %s", intsOrAny(c.HeadDims))
		line("masking:      %s", masking(c))
		line("GQA:          %s", yesNo(c.GroupedQueryHeads))
		line("Sq != Sk:     %s", yesNo(c.UnequalSeqLens))
		line("max seq len:  %s", limit(c.MaxSeqLen))
		if c.SeqMultiple > 1 {
			line("seq multiple: %d (Sq and Sk)", c.SeqMultiple)
		}
		if len(c.Modes) > 0 {
			modes := make([]string, len(c.Modes))
			for i, m := range c.Modes {
				modes[i] = string(m)
			}
			line("modes:        %s", strings.Join(modes, ", "))
		}
	}
	if opName != attention.Name && attentionLike(opName) {
		line("head dims:    %s", intsOrAny(c.HeadDims))
		// The serving ops align the causal mask bottom-right (ops/mask).
		line("masking:      %s", strings.Replace(masking(c), "top-left", "bottom-right", 1))
		line("GQA:          %s", yesNo(c.GroupedQueryHeads))
		if c.MaxSeqLen > 0 {
			line("max seq len:  %s", limit(c.MaxSeqLen))
		}
	}
	if len(c.Masks) > 0 {
		line("masks:        %s", strings.Join(c.Masks, ", "))
	}
	if c.MaxElements > 0 {
		line("max elements: %d per tensor", c.MaxElements)
	}
	line("needs GPU:    %s", yesNo(c.NeedsGPU))
}

// attentionLike reports whether an op other than attention reads the
// capabilities of attention's kind (head dims, masking, grouped heads):
// decode and varlen, whose axes include kv_heads.
func attentionLike(opName string) bool {
	o, err := ops.Lookup(opName)
	if err != nil {
		return false
	}
	_, ok := o.Spec().Axis("kv_heads")
	return ok
}

func intsOrAny(xs []int) string {
	if len(xs) == 0 {
		return "any"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

func masking(c sdk.Capabilities) string {
	var m []string
	if c.NonCausal {
		m = append(m, "none")
	}
	if c.Causal {
		m = append(m, "causal (top-left)")
	}
	return strings.Join(m, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func limit(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// writeCompiled shows, for a CUDA-file backend with a source, what ptxas
// reports of each kernel compiled for the device there (sm_90 where there
// is none): no GPU is needed, so a spec is checked down to its compile on
// any machine with nvcc.
func writeCompiled(w io.Writer, specPath string, device sdk.Device, compiler *cudafile.Compiler) {
	spec, err := cudafile.Load(specPath)
	if err != nil || spec.Source == "" {
		return
	}
	arch := "sm_90"
	if major, minor, ok := strings.Cut(device.ComputeCapability, "."); ok {
		arch = "sm_" + major + minor
	}
	report, err := compiler.Resources(spec, arch)
	if err != nil {
		fmt.Fprintf(w, "\ncompiled:  no: %s\n", untrusted.Line(firstLine(err.Error()))) // nvcc quotes the source
		return
	}
	fmt.Fprintf(w, "\ncompiled:  for %s with nvcc (%s); ptxas reports, per kernel:\n", report.Arch, report.Compiler)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  kernel\tregisters\tstatic smem B\tspill stores B\tspill loads B\tstack B")
	for _, k := range report.Kernels {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\n", untrusted.Line(k.Kernel), k.Registers, k.SharedBytes, k.SpillStores, k.SpillLoads, k.StackBytes)
	}
	tw.Flush()
}

// firstLine is the first line of a message, for an error whose detail (a
// compiler's log) is too long for describe.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
