package multicall

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flashcore/bench/sdk"
)

// BinaryPrefix starts the file name of every plugin binary; it is the
// host's discovery prefix (core/host.BinaryPrefix), repeated here so that
// plugins need not import the host.
const BinaryPrefix = "flashcore-backend-"

// Plugin is one plugin of a multi-call binary.
type Plugin struct {
	Name string             // the backend's file name without BinaryPrefix
	New  func() sdk.Backend // what the plugin's own main serves
}

// Main runs the plugin that the process was started as and exits; it
// exits 2 with the list of plugins when it cannot tell which one.
func Main(plugins []Plugin) {
	plugin, args, err := Select(os.Args, plugins)
	if err != nil {
		usage(os.Stderr, filepath.Base(os.Args[0]), plugins, err)
		os.Exit(2)
	}
	os.Args = args
	sdk.Serve(plugin.New)
	os.Exit(0)
}

// Select returns the plugin that args (a command line, argv[0] first)
// starts, and the command line that plugin is to see: its own name as
// argv[0] and its own arguments after it.
func Select(args []string, plugins []Plugin) (Plugin, []string, error) {
	if len(args) == 0 {
		return Plugin{}, nil, fmt.Errorf("no command line")
	}
	if name, ok := strings.CutPrefix(filepath.Base(args[0]), BinaryPrefix); ok {
		plugin, err := find(name, plugins)
		return plugin, args, err
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		return Plugin{}, nil, fmt.Errorf("name the plugin to run")
	}
	plugin, err := find(args[1], plugins)
	own := append([]string{filepath.Join(filepath.Dir(args[0]), BinaryPrefix+args[1])}, args[2:]...)
	return plugin, own, err
}

func find(name string, plugins []Plugin) (Plugin, error) {
	for _, p := range plugins {
		if p.Name == name {
			return p, nil
		}
	}
	return Plugin{}, fmt.Errorf("this binary holds no plugin %q", name)
}

func usage(w io.Writer, binary string, plugins []Plugin, err error) {
	names := make([]string, len(plugins))
	for i, p := range plugins {
		names[i] = p.Name
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%s: %v\n", binary, err)
	fmt.Fprintf(w, "%s holds the plugins %s. The host starts them through links named %sNAME;\n",
		binary, strings.Join(names, ", "), BinaryPrefix)
	fmt.Fprintf(w, "by hand: %s NAME [ARGS]\n", binary)
}
