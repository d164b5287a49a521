package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Version is set at build time with -ldflags "-X github.com/flashcore/bench/cli.Version=...".
var Version = "dev"

// GitCommit is set at build time like Version.
var GitCommit = ""

const usage = `flashcore: is my attention kernel correct, and is it faster?

Usage:
  flashcore run [--suite FILE] [--backends a,b] [--seed N] [--format F] [--out FILE] [--keep-going]
                [--budget 2s|suite=60s] [--explain-time] [--shard I/N] [--devices all|0,1,...]
  flashcore merge OUT.json IN1.json [IN2.json ...] [--format F]
  flashcore slurm --suite FILE --shards N [--gpus-per-task 1] [--partition P] [--time T] [--out DIR]
  flashcore k8s --suite FILE --shards N --image IMG [--claim PVC] [--out DIR]
  flashcore list [--suite FILE]
  flashcore doctor                     what this machine has and lacks for each backend
  flashcore describe BACKEND... | --backends a,b [--suite FILE]
  flashcore report FILE [--format F] [--baseline BACKEND]
  flashcore plot FILE [--out DIR] [--baseline BACKEND]
  flashcore compare OLD NEW [NEWER...] [--format F] [--threshold 0.05] [--cpu-threshold 0.35] [--labels a,b] [--fail-on-regression]
  flashcore verify-timing [--suite FILE] [--backends a,b] [--l2 hot|cold] [--reference auto|cupti|ncu] [--out DIR]
  flashcore profile --backend B|ROW --case CASE [--suite FILE] [--out DIR]
  flashcore gate [--suite FILE] [--backends a,b] [--runs N] [--max-registers R] [RESULTS.json]
  flashcore ablate [--suite FILE] [--chain a,b:variant,c] [--case ID] [--format F] [RESULTS.json]
  flashcore calibrate [--device gpu|cpu]
  flashcore roofline RESULTS.json [--peaks FILE] [--format F]
  flashcore tune --backend B [--suite FILE] [--budget N] [--time D] [--seed S] [--resume STATE] [--out FILE]
  flashcore version

Formats: table (default), markdown, csv, json; report also html, benchfmt.
Plugins are found in $FLASHCORE_PLUGIN_PATH, next to the flashcore binary,
and in the suite's plugin_path.

Exit codes: 0 ok; 1 a row FAILed its check; 2 usage or suite error; 3 a row
is an ERROR (a plugin crashed, hung, broke the contract or reported
implausible times) or a plugin failed to start or describe itself; 4 other
errors; 5 a backend named with --backends is unavailable; 6 a gate FAILed
(flashcore gate); 130 interrupted.
`

// Main runs flashcore with args (without the program name).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return withCode(ExitUsage, errors.New("no command given"))
	}
	err := dispatch(ctx, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		// The help asked for was printed; asking is not an error.
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runCommand(ctx, rest, stdout, stderr)
	case "list":
		return listCommand(ctx, rest, stdout, stderr)
	case "doctor":
		return doctorCommand(ctx, rest, stdout, stderr)
	case "describe":
		return describeCommand(ctx, rest, stdout, stderr)
	case "report":
		return reportCommand(rest, stdout, stderr)
	case "compare":
		return compareCommand(rest, stdout, stderr)
	case "plot":
		return plotCommand(rest, stdout, stderr)
	case "merge", "slurm", "k8s":
		return clusterCommand(cmd, rest, stdout, stderr)
	case "verify-timing":
		return verifyTimingCommand(ctx, rest, stdout, stderr)
	case "profile":
		return profileCommand(ctx, rest, stdout, stderr)
	case "gate":
		return gateCommand(ctx, rest, stdout, stderr)
	case "ablate":
		return ablateCommand(ctx, rest, stdout, stderr)
	case "calibrate":
		return calibrateCommand(ctx, rest, stdout, stderr)
	case "roofline":
		return rooflineCommand(rest, stdout, stderr)
	case "tune":
		return tuneCommand(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "flashcore %s %s\n", Version, GitCommit)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return withCode(ExitUsage, fmt.Errorf("unknown command %q", cmd))
}

// parseFlags parses a subcommand's flags, allowing flags after positional
// arguments (flashcore describe cuda-v8 --suite x.toml).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(stderr)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, withCode(ExitUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
