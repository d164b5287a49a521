// Package plugins_test keeps the plugin folders alike. Every folder under
// plugins/ is one backend plugin and must describe itself the same way:
//
//   - README.md, whose first heading names the plugin;
//   - main.go, whose func main is the single call sdk.Serve(New), so that
//     the handshake, the gRPC limits and the logging stay in the SDK;
//   - conformance_test.go, which calls Run of the conformance kit, so that
//     every plugin's output is checked as flashcore run checks it.
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
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// sdkImportPath is the package whose Serve a plugin's main must call.
const sdkImportPath = "github.com/flashcore/bench/sdk"

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

// checkMain requires main.go in package main whose func main has exactly
// one statement: a call of Serve from the SDK package, with one argument.
func checkMain(plugins fs.FS, dir string) string {
	src, err := fs.ReadFile(plugins, path.Join(dir, "main.go"))
	if err != nil {
		return "has no main.go"
	}
	file, err := parser.ParseFile(token.NewFileSet(), path.Join(dir, "main.go"), src, parser.SkipObjectResolution)
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
	body := mainBody(file)
	if body == nil {
		return "main.go has no func main"
	}
	if len(body.List) != 1 || !isServeCall(body.List[0], sdkName) {
		return fmt.Sprintf("func main must be the single statement %s.Serve(New)", sdkName)
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

func isServeCall(stmt ast.Stmt, sdkName string) bool {
	expr, ok := stmt.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := expr.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	fun, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || fun.Sel.Name != "Serve" {
		return false
	}
	pkg, ok := fun.X.(*ast.Ident)
	return ok && pkg.Name == sdkName
}

// The checker itself is tested on folders built in memory, one broken
// convention each, so that a check that stops checking fails here.
func TestCheckPluginFolder(t *testing.T) {
	const goodMain = "package main\n\nimport \"github.com/flashcore/bench/sdk\"\n\nfunc main() { sdk.Serve(New) }\n"
	const goodReadme = "# my-backend\n\nWhat it is.\n"
	const goodConformance = "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/flashcore/bench/conformance\"\n)\n\n" +
		"func TestConformance(t *testing.T) { conformance.Run(t, conformance.Options{Binary: \"b\"}) }\n"
	tests := []struct {
		name  string
		files map[string]string // file name in the folder → content
		want  string            // part of the one problem; "" for none
	}{
		{"complete", map[string]string{"README.md": goodReadme, "main.go": goodMain, "conformance_test.go": goodConformance}, ""},
		{"heading with more words", map[string]string{"README.md": "# `my-backend`: a fast one\n",
			"main.go": goodMain, "conformance_test.go": goodConformance}, ""},
		{"aliased sdk import", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance,
			"main.go": "package main\n\nimport fc \"github.com/flashcore/bench/sdk\"\n\nfunc main() { fc.Serve(New) }\n"}, ""},
		{"no README", map[string]string{"main.go": goodMain, "conformance_test.go": goodConformance}, "has no README.md"},
		{"README without heading", map[string]string{"README.md": "text\n", "main.go": goodMain, "conformance_test.go": goodConformance},
			"README.md has no heading"},
		{"heading names another plugin", map[string]string{"README.md": "# my-backend-2\n", "main.go": goodMain, "conformance_test.go": goodConformance},
			"does not name the plugin"},
		{"heading only inside a code fence", map[string]string{"README.md": "```\n# my-backend\n```\n## Other\n",
			"main.go": goodMain, "conformance_test.go": goodConformance}, "does not name the plugin"},
		{"no main.go", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance}, "has no main.go"},
		{"main.go broken", map[string]string{"README.md": goodReadme, "main.go": "package main\nfunc main() {", "conformance_test.go": goodConformance},
			"does not parse"},
		{"main does more", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance,
			"main.go": "package main\n\nimport \"github.com/flashcore/bench/sdk\"\n\nfunc main() { setup(); sdk.Serve(New) }\n"},
			"single statement"},
		{"serve of another package", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance,
			"main.go": "package main\n\nimport (\n\t\"github.com/flashcore/bench/sdk\"\n\tplugin \"github.com/hashicorp/go-plugin\"\n)\n\nvar _ sdk.Backend\n\nfunc main() { plugin.Serve(nil) }\n"},
			"single statement"},
		{"no sdk import", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance,
			"main.go": "package main\n\nfunc main() { sdk.Serve(New) }\n"}, "does not import"},
		{"not package main", map[string]string{"README.md": goodReadme, "conformance_test.go": goodConformance,
			"main.go": "package mybackend\n\nimport \"github.com/flashcore/bench/sdk\"\n\nfunc main() { sdk.Serve(New) }\n"},
			"not main"},
		{"no conformance test", map[string]string{"README.md": goodReadme, "main.go": goodMain, "backend_test.go": ""},
			"has no conformance_test.go"},
		{"conformance test without the kit", map[string]string{"README.md": goodReadme, "main.go": goodMain,
			"conformance_test.go": "package main\n\nimport \"testing\"\n\nfunc TestConformance(t *testing.T) { t.Run(\"x\", nil) }\n"},
			"does not call Run of"},
		{"kit imported but Run not called", map[string]string{"README.md": goodReadme, "main.go": goodMain,
			"conformance_test.go": "package main\n\nimport \"github.com/flashcore/bench/conformance\"\n\nvar _ = conformance.Cases\n"},
			"does not call Run of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			folder := fstest.MapFS{}
			for name, content := range tc.files {
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
