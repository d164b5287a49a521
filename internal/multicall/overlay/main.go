// Command overlay writes the go build overlay of a multi-call plugin
// binary (package multicall) and prints its path:
//
//	go run ./internal/multicall/overlay -out DIR -main cmd/flashcore-plugins plugins/a plugins/b
//	go build -overlay "$(that)" -o bin/flashcore-plugins ./cmd/flashcore-plugins
//
// It runs from the module's root.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/flashcore/bench/internal/multicall"
)

func main() {
	out := flag.String("out", "", "directory for the overlay's files (emptied first)")
	mainDir := flag.String("main", "cmd/flashcore-plugins", "the multi-call binary's main package")
	flag.Parse()
	if err := run(*out, *mainDir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "overlay:", err)
		os.Exit(1)
	}
}

func run(out, mainDir string, pluginDirs []string) error {
	if out == "" || len(pluginDirs) == 0 {
		return fmt.Errorf("usage: overlay -out DIR [-main DIR] PLUGIN_DIR...")
	}
	module, err := modulePath("go.mod")
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	path, err := multicall.Overlay(multicall.Build{Module: module, Root: ".", MainDir: mainDir, PluginDirs: pluginDirs}, out)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// modulePath reads the module line of go.mod.
func modulePath(goMod string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("run from the module's root: %w", err)
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		if module, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(module), `"`), nil
		}
	}
	return "", fmt.Errorf("%s has no module line", goMod)
}
