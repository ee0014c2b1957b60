package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Limits of the code below limited (issue 25): no function over
// maxFuncLines lines outside generated code, no type with more than
// maxMethods methods, no package-level mutable switch.
const (
	maxFuncLines = 120
	maxMethods   = 20
)

// limited are the directories (below the module root) that keep the
// limits; "dir/..." is dir's subtree.
var limited = []string{"cmd/umtrace/...", "analyze/...", "report/...", "reproducer", "internal/...", "ingest/sanitizer"}

// onceState are package-level variables set after their declaration that
// are no switch: state computed once, under a sync.Once.
var onceState = map[string]bool{
	"reproducer.loaded":   true, // loadOnce: libcuda and its entry points
	"reproducer.loadErr":  true,
	"reproducer.nvtxMode": true, // nvtxOnce: how NVTX ranges are emitted
}

// TestLimits: the functions, types and package state of limited keep the
// limits.
func TestLimits(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := map[string][]string{} // package directory -> its .go files
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			if within(filepath.ToSlash(rel), limited) {
				dirs[rel] = append(dirs[rel], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no Go files found below the module root")
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		for _, v := range checkPackage(dir, dirs[dir]) {
			t.Error(v)
		}
	}
}

// within reports whether dir is one of pats ("x/..." matches x and below).
func within(dir string, pats []string) bool {
	for _, p := range pats {
		if sub, ok := strings.CutSuffix(p, "/..."); ok && (dir == sub || strings.HasPrefix(dir, sub+"/")) || dir == p {
			return true
		}
	}
	return false
}

// checkPackage lists what breaks the limits in the package of files in dir.
func checkPackage(dir string, files []string) []string {
	fset := token.NewFileSet()
	var vs []string
	methods := map[string]int{}
	vars := map[string]bool{}        // package-level variables (non-test files)
	top := map[*ast.ValueSpec]bool{} // their declarations
	parsed := map[string]*ast.File{}
	pkgName := ""
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return []string{err.Error()}
		}
		parsed[f] = af
		test := strings.HasSuffix(f, "_test.go")
		if !test {
			pkgName = af.Name.Name
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if test {
					continue
				}
				if n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1; n > maxFuncLines && !ast.IsGenerated(af) {
					vs = append(vs, fmt.Sprintf("%s: %s is %d lines (at most %d)", fset.Position(d.Pos()), d.Name.Name, n, maxFuncLines))
				}
				if d.Recv != nil {
					methods[recvName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR || test {
					continue
				}
				for _, s := range d.Specs {
					s := s.(*ast.ValueSpec)
					top[s] = true
					for i, n := range s.Names {
						vars[n.Name] = true
						if isFunc(s, i) {
							vs = append(vs, fmt.Sprintf("%s: package-level variable %s holds a function: a switch (pass it as a parameter)", fset.Position(n.Pos()), n.Name))
						}
					}
				}
			}
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(methods)) {
		if n := methods[typ]; n > maxMethods {
			vs = append(vs, fmt.Sprintf("%s: type %s has %d methods (at most %d)", dir, typ, n, maxMethods))
		}
	}
	for _, f := range files {
		af := parsed[f]
		if af.Name.Name != pkgName {
			continue // an external test package
		}
		ast.Inspect(af, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					return true
				}
				lhs = n.Lhs
			case *ast.IncDecStmt:
				lhs = []ast.Expr{n.X}
			}
			for _, e := range lhs {
				id, ok := e.(*ast.Ident)
				if !ok || !vars[id.Name] || onceState[pkgName+"."+id.Name] {
					continue
				}
				if id.Obj != nil {
					if s, ok := id.Obj.Decl.(*ast.ValueSpec); !ok || !top[s] {
						continue // a local of the same name
					}
				}
				vs = append(vs, fmt.Sprintf("%s: package-level variable %s is set after its declaration: a mutable switch (make it a constant or a parameter)", fset.Position(id.Pos()), id.Name))
			}
			return true
		})
	}
	return vs
}

// recvName is the name of a method's receiver type.
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprint(x)
		}
	}
}

// isFunc reports whether the i-th variable of s holds a function.
func isFunc(s *ast.ValueSpec, i int) bool {
	if _, ok := s.Type.(*ast.FuncType); ok {
		return true
	}
	if i < len(s.Values) {
		_, ok := s.Values[i].(*ast.FuncLit)
		return ok
	}
	return false
}

// TestCheckPackage: each limit is found in made-up code.
func TestCheckPackage(t *testing.T) {
	dir := t.TempDir()
	long := "func long() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines) + "}\n"
	var many strings.Builder
	for i := range maxMethods + 1 {
		fmt.Fprintf(&many, "func (*big) m%d() {}\n", i)
	}
	src := "package p\n\ntype big struct{}\n\nvar (\n\tswitchVar = 1\n\thook = func() {}\n\ttable = map[string]int{}\n)\n\n" + long + many.String() +
		"func set() {\n\tswitchVar = 2\n\ttable[\"x\"] = 1\n\tlocal := 0\n\tlocal = 1\n\t_ = local\n}\n"
	test := "package p\n\nfunc init() { switchVar++ }\n"
	p, pt := filepath.Join(dir, "p.go"), filepath.Join(dir, "p_test.go")
	if err := writeFiles(map[string]string{p: src, pt: test}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(checkPackage(dir, []string{p, pt}), "\n")
	for _, want := range []string{
		"long is 122 lines",
		"type big has 21 methods",
		"variable hook holds a function",
		"p.go:155:2: package-level variable switchVar is set", // in set
		"p_test.go:3:15: package-level variable switchVar is set",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 5 {
		t.Errorf("%d violations, want 5:\n%s", n, got)
	}
}

func writeFiles(files map[string]string) error {
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}
