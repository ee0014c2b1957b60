package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doors are the calls that turn a file into an analysis, and the only
// non-test files (below the module root) that may make each: every
// command (single-file and job mode, diff, gate, batch, export, reproduce
// --validate) goes through cmd/umtrace/internal/opener.
var doors = map[string][]string{
	"analyze.Analyze":     {"analyze/analyzetest/analyzetest.go"},
	"analyze.AnalyzeFile": {"cmd/umtrace/internal/opener/open.go"},
	"nsys.Open": {
		"cmd/umtrace/internal/opener/open.go",
		"cmd/umtrace/redact.go", // checks that a redacted copy still opens; analyzes nothing
		"analyze/analyzetest/analyzetest.go",
	},
}

// TestOneDoor: outside the packages that define them, analyze.Analyze,
// analyze.AnalyzeFile and nsys.Open are called only where doors allows.
func TestOneDoor(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		af, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, v := range doorCalls(fset, rel, af) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// doorCalls lists the calls of af (file rel) to a door that doors does not
// allow there.
func doorCalls(fset *token.FileSet, rel string, af *ast.File) []string {
	var vs []string
	ast.Inspect(af, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		name := x.Name + "." + sel.Sel.Name
		allowed, door := doors[name]
		if door && !slices.Contains(allowed, rel) {
			vs = append(vs, fmt.Sprintf("%s: %s: commands open and analyze traces through cmd/umtrace/internal/opener", fset.Position(call.Pos()), name))
		}
		return true
	})
	return vs
}

// TestDoorCalls: a call to a door outside its files is found.
func TestDoorCalls(t *testing.T) {
	src := "package p\n\nfunc f() {\n\tr, _ := nsys.Open(\"x\", nsys.Options{})\n\tanalyze.Analyze(r, analyze.DefaultOptions())\n}\n"
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "cmd/umtrace/x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	if got := doorCalls(fset, "cmd/umtrace/x.go", af); len(got) != 2 {
		t.Errorf("want 2 calls outside the door, got %v", got)
	}
	if got := doorCalls(fset, "analyze/analyzetest/analyzetest.go", af); len(got) != 0 {
		t.Errorf("analyzetest may open and analyze: got %v", got)
	}
}
