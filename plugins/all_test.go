// Package plugins_test keeps the plugin folders alike. Every folder under
// plugins/ is one backend plugin and must describe itself the same way:
//
//   - README.md, whose first heading names the plugin;
//   - a library package named after the folder without its dashes
//     (plugins/cpu-reference is package cpureference) that exports New;
//   - cmd/flashcore-backend-NAME/main.go, the plugin's own binary, whose
//     func main is the single call sdk.Serve(pkg.New) of that package, so
//     that the handshake, the gRPC limits and the logging stay in the SDK;
//   - conformance_test.go, which calls Run of the conformance kit, so that
//     every plugin's output is checked as flashcore run checks it;
//   - an entry in exactly one multi-call binary's list: cmd/flashcore-plugins
//     for a plugin that needs no CUDA, cmd/flashcore-plugins-cuda for one
//     that does (TestMultiCallBinariesHoldEveryPlugin).
//
// A folder that cannot comply is listed in exempt with its reason; nothing
// is skipped silently. Where to start: TestPluginFolders.
package plugins_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// sdkImportPath is the package whose Serve a plugin's main must call.
const sdkImportPath = "github.com/flashcore/bench/sdk"

// pluginsImportPath is the import path of this folder: a plugin's package
// is pluginsImportPath/NAME.
const pluginsImportPath = "github.com/flashcore/bench/plugins"

// binaryPrefix starts the file name of every plugin binary
// (multicall.BinaryPrefix).
const binaryPrefix = "flashcore-backend-"

// conformanceImportPath is the kit whose Run a plugin's conformance test
// must call.
const conformanceImportPath = "github.com/flashcore/bench/conformance"

// exempt lists the folders under plugins/ that are not held to the
// conventions, each with the reason. Keep it empty when you can.
var exempt = map[string]string{}

func TestPluginFolders(t *testing.T) {
	plugins := os.DirFS(".")
	entries, err := fs.ReadDir(plugins, ".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		name := entry.Name()
		if reason, ok := exempt[name]; ok {
			t.Logf("plugins/%s is exempt: %s", name, reason)
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			for _, problem := range checkPluginFolder(plugins, name) {
				t.Errorf("plugins/%s: %s", name, problem)
			}
		})
	}
	if checked == 0 {
		t.Error("no plugin folders found under plugins/")
	}
}

// An exemption for a folder that is gone would hide the next folder of
// that name: the list must only name folders that exist.
func TestExemptionsAreCurrent(t *testing.T) {
	for name, reason := range exempt {
		if reason == "" {
			t.Errorf("plugins/%s is exempt without a reason", name)
		}
		if info, err := os.Stat(name); err != nil || !info.IsDir() {
			t.Errorf("plugins/%s is exempt but is not a folder; remove it from exempt", name)
		}
	}
}

// checkPluginFolder returns every convention the folder dir of plugins
// breaks, as sentences.
func checkPluginFolder(plugins fs.FS, dir string) []string {
	var problems []string
	if problem := checkReadme(plugins, dir); problem != "" {
		problems = append(problems, problem)
	}
	if problem := checkPackage(plugins, dir); problem != "" {
		problems = append(problems, problem)
	}
	if problem := checkMain(plugins, dir); problem != "" {
		problems = append(problems, problem)
	}
	if problem := checkConformanceTest(plugins, dir); problem != "" {
		problems = append(problems, problem)
	}
	return problems
}

// checkConformanceTest requires conformance_test.go to call Run of the
// conformance kit.
func checkConformanceTest(plugins fs.FS, dir string) string {
	src, err := fs.ReadFile(plugins, path.Join(dir, "conformance_test.go"))
	if err != nil {
		return "has no conformance_test.go"
	}
	file, err := parser.ParseFile(token.NewFileSet(), path.Join(dir, "conformance_test.go"), src, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Sprintf("conformance_test.go does not parse: %v", err)
	}
	kit, imported := localName(file, conformanceImportPath)
	if !imported || !callsRun(file, kit) {
		return fmt.Sprintf("conformance_test.go does not call Run of %s", conformanceImportPath)
	}
	return ""
}

// callsRun reports whether file calls kit.Run anywhere.
func callsRun(file *ast.File, kit string) bool {
	found := false
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if fun, ok := call.Fun.(*ast.SelectorExpr); ok && fun.Sel.Name == "Run" {
			if pkg, ok := fun.X.(*ast.Ident); ok && pkg.Name == kit {
				found = true
			}
		}
		return !found
	})
	return found
}

// checkReadme requires README.md whose first heading contains the plugin's
// name as a whole word ("# cpu-reference", "# `triton`: ...").
func checkReadme(plugins fs.FS, dir string) string {
	readme, err := fs.ReadFile(plugins, path.Join(dir, "README.md"))
	if err != nil {
		return "has no README.md"
	}
	heading, ok := firstHeading(readme)
	if !ok {
		return "README.md has no heading"
	}
	if !containsWord(heading, dir) {
		return fmt.Sprintf("README.md's first heading %q does not name the plugin %q", heading, dir)
	}
	return ""
}

// firstHeading is the text of the first Markdown ATX heading outside code
// fences.
func firstHeading(markdown []byte) (string, bool) {
	scanner := bufio.NewScanner(bytes.NewReader(markdown))
	inFence := false
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if level := len(line) - len(text); level <= 6 && (text == "" || text[0] == ' ') {
			return strings.TrimSpace(text), true
		}
	}
	return "", false
}

// containsWord reports whether word occurs in text with no letter, digit,
// '-' or '_' on either side.
func containsWord(text, word string) bool {
	isWordByte := func(b byte) bool {
		return b == '-' || b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	for start := 0; ; {
		i := strings.Index(text[start:], word)
		if i < 0 {
			return false
		}
		i += start
		end := i + len(word)
		if (i == 0 || !isWordByte(text[i-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		start = i + 1
	}
}

// packageName is the name of the library package in the plugin folder
// dir: the folder's name without its dashes, so that it is an identifier.
func packageName(dir string) string { return strings.ReplaceAll(dir, "-", "") }

// mainPath is the plugin's own main, relative to plugins/.
func mainPath(dir string) string { return path.Join(dir, "cmd", binaryPrefix+dir, "main.go") }

// checkPackage requires the folder's Go files to be the library package
// packageName(dir) (its tests may be packageName(dir)_test).
func checkPackage(plugins fs.FS, dir string) string {
	want := packageName(dir)
	names, err := fs.Glob(plugins, path.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		return "has no Go files"
	}
	for _, name := range names {
		src, err := fs.ReadFile(plugins, name)
		if err != nil {
			return err.Error()
		}
		file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.PackageClauseOnly)
		if err != nil {
			return fmt.Sprintf("%s does not parse: %v", path.Base(name), err)
		}
		got := file.Name.Name
		if got != want && !(strings.HasSuffix(name, "_test.go") && got == want+"_test") {
			return fmt.Sprintf("%s is package %s, not %s", path.Base(name), got, want)
		}
	}
	return ""
}

// checkMain requires cmd/flashcore-backend-NAME/main.go in package main
// whose func main has exactly one statement: a call of Serve from the SDK
// package with the New of the plugin's package.
func checkMain(plugins fs.FS, dir string) string {
	mainFile := mainPath(dir)
	src, err := fs.ReadFile(plugins, mainFile)
	if err != nil {
		return fmt.Sprintf("has no %s", strings.TrimPrefix(mainFile, dir+"/"))
	}
	file, err := parser.ParseFile(token.NewFileSet(), mainFile, src, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Sprintf("main.go does not parse: %v", err)
	}
	if file.Name.Name != "main" {
		return fmt.Sprintf("main.go is package %s, not main", file.Name.Name)
	}
	sdkName, imported := localName(file, sdkImportPath)
	if !imported {
		return fmt.Sprintf("main.go does not import %s", sdkImportPath)
	}
	pluginName, imported := localName(file, pluginsImportPath+"/"+dir)
	if !imported {
		return fmt.Sprintf("main.go does not import %s/%s", pluginsImportPath, dir)
	}
	body := mainBody(file)
	if body == nil {
		return "main.go has no func main"
	}
	if len(body.List) != 1 || !isServeCall(body.List[0], sdkName, pluginName) {
		return fmt.Sprintf("func main must be the single statement %s.Serve(%s.New)", sdkName, pluginName)
	}
	return ""
}

// localName is the name under which file refers to the package at
// importPath.
func localName(file *ast.File, importPath string) (string, bool) {
	for _, spec := range file.Imports {
		if p, err := strconv.Unquote(spec.Path.Value); err != nil || p != importPath {
			continue
		}
		if spec.Name != nil {
			return spec.Name.Name, true
		}
		return path.Base(importPath), true
	}
	return "", false
}

func mainBody(file *ast.File) *ast.BlockStmt {
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return fn.Body
		}
	}
	return nil
}

func isServeCall(stmt ast.Stmt, sdkName, pluginName string) bool {
	expr, ok := stmt.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := expr.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	return isSelector(call.Fun, sdkName, "Serve") && isSelector(call.Args[0], pluginName, "New")
}

// isSelector reports whether expr is pkg.name.
func isSelector(expr ast.Expr, pkg, name string) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

// The checker itself is tested on folders built in memory, one broken
// convention each, so that a check that stops checking fails here.
func TestCheckPluginFolder(t *testing.T) {
	const mainFile = "cmd/flashcore-backend-my-backend/main.go"
	const goodMain = "package main\n\nimport (\n\tmybackend \"github.com/flashcore/bench/plugins/my-backend\"\n" +
		"\t\"github.com/flashcore/bench/sdk\"\n)\n\nfunc main() { sdk.Serve(mybackend.New) }\n"
	complete := map[string]string{
		"README.md":  "# my-backend\n\nWhat it is.\n",
		"backend.go": "package mybackend\n\nfunc New() {}\n",
		mainFile:     goodMain,
		"conformance_test.go": "package mybackend\n\nimport (\n\t\"testing\"\n\n\t\"github.com/flashcore/bench/conformance\"\n)\n\n" +
			"func TestConformance(t *testing.T) { conformance.Run(t, conformance.Options{Binary: \"b\"}) }\n",
	}
	tests := []struct {
		name   string
		change map[string]string // file name in the folder → content; "" removes the file
		want   string            // part of the one problem; "" for none
	}{
		{"complete", nil, ""},
		{"heading with more words", map[string]string{"README.md": "# `my-backend`: a fast one\n"}, ""},
		{"external test package", map[string]string{"x_test.go": "package mybackend_test\n"}, ""},
		{"aliased imports", map[string]string{mainFile: "package main\n\nimport (\n\tfc \"github.com/flashcore/bench/sdk\"\n" +
			"\tb \"github.com/flashcore/bench/plugins/my-backend\"\n)\n\nfunc main() { fc.Serve(b.New) }\n"}, ""},
		{"no README", map[string]string{"README.md": ""}, "has no README.md"},
		{"README without heading", map[string]string{"README.md": "text\n"}, "README.md has no heading"},
		{"heading names another plugin", map[string]string{"README.md": "# my-backend-2\n"}, "does not name the plugin"},
		{"heading only inside a code fence", map[string]string{"README.md": "```\n# my-backend\n```\n## Other\n"},
			"does not name the plugin"},
		{"still a main package", map[string]string{"backend.go": "package main\n"}, "backend.go is package main, not mybackend"},
		{"package named otherwise", map[string]string{"backend.go": "package my_backend\n"}, "not mybackend"},
		{"no main.go", map[string]string{mainFile: ""}, "has no " + mainFile},
		{"main.go broken", map[string]string{mainFile: "package main\nfunc main() {"}, "does not parse"},
		{"main does more", map[string]string{mainFile: strings.Replace(goodMain, "{ sdk", "{ setup(); sdk", 1)}, "single statement"},
		{"main serves something else", map[string]string{mainFile: strings.Replace(goodMain, "mybackend.New)", "mybackend.Other)", 1)},
			"single statement sdk.Serve(mybackend.New)"},
		{"serve of another package", map[string]string{mainFile: "package main\n\nimport (\n\tmybackend \"github.com/flashcore/bench/plugins/my-backend\"\n" +
			"\t\"github.com/flashcore/bench/sdk\"\n\tplugin \"github.com/hashicorp/go-plugin\"\n)\n\nvar _ sdk.Backend\n\n" +
			"func main() { plugin.Serve(mybackend.New) }\n"}, "single statement"},
		{"no sdk import", map[string]string{mainFile: "package main\n\nfunc main() { sdk.Serve(New) }\n"}, "does not import " + sdkImportPath},
		{"does not import its package", map[string]string{mainFile: "package main\n\nimport \"github.com/flashcore/bench/sdk\"\n\n" +
			"func main() { sdk.Serve(New) }\n"}, "does not import " + pluginsImportPath + "/my-backend"},
		{"main not package main", map[string]string{mainFile: strings.Replace(goodMain, "package main", "package mybackend", 1)}, "not main"},
		{"no conformance test", map[string]string{"conformance_test.go": ""}, "has no conformance_test.go"},
		{"conformance test without the kit", map[string]string{"conformance_test.go": "package mybackend\n\nimport \"testing\"\n\n" +
			"func TestConformance(t *testing.T) { t.Run(\"x\", nil) }\n"}, "does not call Run of"},
		{"kit imported but Run not called", map[string]string{"conformance_test.go": "package mybackend\n\n" +
			"import \"github.com/flashcore/bench/conformance\"\n\nvar _ = conformance.Cases\n"}, "does not call Run of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			folder := fstest.MapFS{}
			for name, content := range complete {
				folder["my-backend/"+name] = &fstest.MapFile{Data: []byte(content)}
			}
			for name, content := range tc.change {
				if content == "" {
					delete(folder, "my-backend/"+name)
					continue
				}
				folder["my-backend/"+name] = &fstest.MapFile{Data: []byte(content)}
			}
			problems := checkPluginFolder(folder, "my-backend")
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
				t.Errorf("problems %q, want one mentioning %q", problems, tc.want)
			}
		})
	}
}

// multiCallBinaries are the multi-call binaries' main files (relative to
// the module's root, which is ..) and whether each is the one for the plugins that need CUDA.
var multiCallBinaries = []struct {
	main string
	cuda bool
}{
	{"cmd/flashcore-plugins/main.go", false},
	{"cmd/flashcore-plugins-cuda/main.go", true},
}

// Every plugin folder is in exactly one multi-call binary, the one for
// plugins that need CUDA exactly when it does (by the rule the Makefile
// uses to link it there, needsCUDA), under its folder's name.
func TestMultiCallBinariesHoldEveryPlugin(t *testing.T) {
	plugins := os.DirFS(".")
	held := map[string][]string{} // plugin folder → the binaries listing it
	for _, binary := range multiCallBinaries {
		entries, err := listedPlugins(binary.main)
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range entries {
			if entry.name != entry.dir {
				t.Errorf("%s lists plugins/%s under the name %q", binary.main, entry.dir, entry.name)
			}
			if cuda := needsCUDA(plugins, entry.dir); cuda != binary.cuda {
				t.Errorf("%s lists plugins/%s, which %s CUDA", binary.main, entry.dir, map[bool]string{true: "needs", false: "does not need"}[cuda])
			}
			held[entry.dir] = append(held[entry.dir], binary.main)
		}
	}
	entries, err := fs.ReadDir(plugins, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		if _, ok := exempt[entry.Name()]; !entry.IsDir() || ok {
			continue
		}
		name := entry.Name()
		switch binaries := held[name]; {
		case len(binaries) == 0:
			want := multiCallBinaries[0].main
			if needsCUDA(plugins, name) {
				want = multiCallBinaries[1].main
			}
			t.Errorf("plugins/%s is in no multi-call binary: add {Name: %q, New: %s.New} to %s", name, name, packageName(name), want)
		case len(binaries) > 1:
			t.Errorf("plugins/%s is in more than one multi-call binary: %v", name, binaries)
		}
	}
}

// listedPlugin is one entry {Name: "name", New: pkg.New} of a multi-call
// binary's list, with the folder under plugins/ that pkg is.
type listedPlugin struct{ name, dir string }

// listedPlugins reads the entries of the multicall.Plugin list in the
// multi-call binary's main file.
func listedPlugins(mainFile string) ([]listedPlugin, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path.Join("..", mainFile), nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{} // local package name → plugin folder
	for _, spec := range file.Imports {
		importPath, _ := strconv.Unquote(spec.Path.Value)
		if dir, ok := strings.CutPrefix(importPath, pluginsImportPath+"/"); ok {
			name, _ := localName(file, importPath)
			dirs[name] = dir
		}
	}
	var listed []listedPlugin
	var problem error
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || !isSelector(lit.Type, "multicall", "Plugin") && lit.Type != nil {
			return true
		}
		if lit.Type == nil && !hasKey(lit, "New") {
			return true
		}
		entry, err := listedEntry(lit, dirs)
		if err != nil {
			problem = fmt.Errorf("%s: %w", mainFile, err)
		}
		listed = append(listed, entry)
		return false
	})
	if len(listed) == 0 && problem == nil {
		problem = fmt.Errorf("%s lists no plugins", mainFile)
	}
	return listed, problem
}

func hasKey(lit *ast.CompositeLit, key string) bool {
	for _, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if ident, ok := kv.Key.(*ast.Ident); ok && ident.Name == key {
				return true
			}
		}
	}
	return false
}

// listedEntry reads {Name: "name", New: pkg.New}.
func listedEntry(lit *ast.CompositeLit, dirs map[string]string) (listedPlugin, error) {
	var entry listedPlugin
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return entry, fmt.Errorf("a multicall.Plugin without field names")
		}
		switch key, _ := kv.Key.(*ast.Ident); {
		case key != nil && key.Name == "Name":
			if value, ok := kv.Value.(*ast.BasicLit); ok {
				entry.name, _ = strconv.Unquote(value.Value)
			}
		case key != nil && key.Name == "New":
			if sel, ok := kv.Value.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					entry.dir = dirs[pkg.Name]
				}
			}
		}
	}
	if entry.name == "" || entry.dir == "" {
		return entry, fmt.Errorf("an entry that is not {Name: \"NAME\", New: pkg.New} of a package under plugins/")
	}
	return entry, nil
}

// cudaBuildLine matches a build constraint that needs the cuda tag, as the
// Makefile's grep does: cuda, not !cuda.
var cudaBuildLine = regexp.MustCompile(`(?m)^//go:build(.*[^!a-z_])?cuda([^a-z_0-9]|$)`)

// cudaKitImportPath is the CUDA plugin kit, whose CUDA half is behind the
// cuda tag.
const cudaKitImportPath = "github.com/flashcore/bench/cudakit"

// needsCUDA reports whether the plugin in dir needs CUDA: one of its Go
// files (tests aside) has a build constraint with the cuda tag, or imports
// the CUDA plugin kit. The Makefile greps for the same two things.
func needsCUDA(plugins fs.FS, dir string) bool {
	names, _ := fs.Glob(plugins, path.Join(dir, "*.go"))
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(plugins, name)
		if err != nil {
			continue
		}
		if cudaBuildLine.Match(src) || bytes.Contains(src, []byte(strconv.Quote(cudaKitImportPath))) {
			return true
		}
	}
	return false
}

func TestNeedsCUDA(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            bool
	}{
		{"plain Go", "backend.go", "package p\n", false},
		{"cuda tag", "embed_cuda.go", "//go:build cuda\n\npackage p\n", true},
		{"cuda among others", "x.go", "//go:build linux && cuda\n\npackage p\n", true},
		{"only the twin", "embed_nocuda.go", "//go:build !cuda\n\npackage p\n", false},
		{"a tag that merely contains cuda", "x.go", "//go:build cudart\n\npackage p\n", false},
		{"the kit", "backend.go", "package p\n\nimport \"github.com/flashcore/bench/cudakit\"\n", true},
		{"the kit's driver package alone", "backend.go", "package p\n\nimport \"github.com/flashcore/bench/cudakit/gpu\"\n", false},
		{"a test with the tag", "backend_cuda_test.go", "//go:build cuda\n\npackage p\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			folder := fstest.MapFS{"p/" + tc.file: &fstest.MapFile{Data: []byte(tc.src)}}
			if got := needsCUDA(folder, "p"); got != tc.want {
				t.Errorf("needsCUDA = %v, want %v", got, tc.want)
			}
		})
	}
}
