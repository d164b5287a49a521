package multicall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RegistryFile is the file the overlay adds to the multi-call binary's
// main package: it fills that package's plugins variable.
const RegistryFile = "plugins_gen.go"

// Build describes one multi-call binary.
type Build struct {
	// Module is the module path, e.g. "github.com/flashcore/bench".
	Module string
	// Root is the module's root directory.
	Root string
	// MainDir is the binary's main package, relative to Root, e.g.
	// "cmd/flashcore-plugins". It declares var plugins []multicall.Plugin.
	MainDir string
	// PluginDirs are the plugin folders relative to Root, e.g.
	// "plugins/cpu-reference"; each is a main package that calls
	// sdk.Serve from its func main. The folder's name is the plugin's.
	PluginDirs []string
}

// overlayJSON is the file format of go build -overlay.
type overlayJSON struct {
	Replace map[string]string
}

// Overlay writes under dir the rewritten plugin files, the registry and
// overlay.json, whose path it returns for go build -overlay.
func Overlay(b Build, dir string) (string, error) {
	root, err := filepath.Abs(b.Root)
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	overlay := overlayJSON{Replace: map[string]string{}}
	var registered []registration
	for _, pluginDir := range b.PluginDirs {
		files, err := rewritePlugin(filepath.Join(root, pluginDir), packageName(pluginDir))
		if err != nil {
			return "", fmt.Errorf("%s: %w", pluginDir, err)
		}
		for name, src := range files {
			written := filepath.Join(dir, filepath.FromSlash(pluginDir), name)
			if err := writeFile(written, src); err != nil {
				return "", err
			}
			overlay.Replace[filepath.Join(root, pluginDir, name)] = written
		}
		registered = append(registered, registration{
			name:       filepath.Base(pluginDir),
			importPath: path.Join(b.Module, filepath.ToSlash(pluginDir)),
		})
	}
	registry := filepath.Join(dir, filepath.FromSlash(b.MainDir), RegistryFile)
	if err := writeFile(registry, registrySource(b.Module, registered)); err != nil {
		return "", err
	}
	overlay.Replace[filepath.Join(root, b.MainDir, RegistryFile)] = registry
	data, err := json.MarshalIndent(overlay, "", "\t")
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	return overlayPath, writeFile(overlayPath, data)
}

// packageName is the name a plugin folder's package gets in the overlay:
// plugin_ and the folder's name with every other byte than a letter or
// digit made _, e.g. plugin_cpu_reference.
func packageName(pluginDir string) string {
	return "plugin_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, filepath.Base(pluginDir))
}

// rewritePlugin returns the plugin's Go files as package pkg, with its
// func main renamed Main, by file name. Only those two identifiers change,
// in place, so every other line keeps its number. Test files are renamed
// too (package main to pkg, main_test to pkg_test): go build reads their
// package clauses, and one folder holds one package.
func rewritePlugin(dir, pkg string) (map[string][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	haveMain := false
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		rewritten, hasMain, err := rewriteFile(filepath.Base(name), src, pkg)
		if err != nil {
			return nil, err
		}
		haveMain = haveMain || hasMain
		files[filepath.Base(name)] = rewritten
	}
	if !haveMain {
		return nil, fmt.Errorf("no func main in package main: not a plugin folder")
	}
	return files, nil
}

// rewriteFile renames the package main of one file to pkg and its func
// main, if it has one, to Main.
func rewriteFile(name string, src []byte, pkg string) ([]byte, bool, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, false, err
	}
	newName := pkg
	switch {
	case file.Name.Name == "main_test" && strings.HasSuffix(name, "_test.go"):
		newName = pkg + "_test"
	case file.Name.Name != "main":
		return nil, false, fmt.Errorf("%s is package %s, not main", name, file.Name.Name)
	}
	edits := []edit{{at: fset.Position(file.Name.Pos()).Offset, old: file.Name.Name, new: newName}}
	hasMain := false
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || strings.HasSuffix(name, "_test.go") {
			continue
		}
		switch fn.Name.Name {
		case "main":
			hasMain = true
			edits = append(edits, edit{at: fset.Position(fn.Name.Pos()).Offset, old: "main", new: "Main"})
		case "Main":
			return nil, false, fmt.Errorf("%s declares Main, the name its func main gets in a multi-call binary", name)
		}
	}
	return applyEdits(src, edits), hasMain, nil
}

// edit replaces old, found at byte offset at, with new.
type edit struct {
	at       int
	old, new string
}

func applyEdits(src []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(src[last:e.at])
		out.WriteString(e.new)
		last = e.at + len(e.old)
	}
	out.Write(src[last:])
	return out.Bytes()
}

type registration struct {
	name, importPath string
}

// registrySource is the generated file that lists the plugins.
func registrySource(module string, plugins []registration) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/multicall for this build; DO NOT EDIT.\n\npackage main\n\nimport (\n")
	fmt.Fprintf(&b, "\t%s\n", strconv.Quote(path.Join(module, "internal/multicall")))
	for i, p := range plugins {
		fmt.Fprintf(&b, "\tp%d %s\n", i, strconv.Quote(p.importPath))
	}
	b.WriteString(")\n\nfunc init() {\n\tplugins = []multicall.Plugin{\n")
	for i, p := range plugins {
		fmt.Fprintf(&b, "\t\t{Name: %s, Main: p%d.Main},\n", strconv.Quote(p.name), i)
	}
	b.WriteString("\t}\n}\n")
	return b.Bytes()
}

func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}
