package archtest

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/umtrace/umtrace"

// A layer is a set of packages (paths below the module; "dir/..." is dir's
// subtree). A package may import packages of its own layer and of the
// layers below it, never of a layer above.
type layer struct {
	name, about string
	pkgs        []string
}

// layers are umtrace's layers, bottom to top. docs/architecture.md draws
// them (TestLayersPicture keeps the picture in step): a new package goes
// into one of them here and there.
func layers() []layer {
	return []layer{
		{"base", "no umtrace imports", []string{
			"internal/outfile", "internal/nsysbin", "internal/pqfile", "internal/archtest", "cmd/umtrace/internal/exitcode", "ingest/testshared"}},
		{"model", "schemas, Source, Builder", []string{"ingest"}},
		{"files", "trace and log readers, synthetic and redacted traces", []string{
			"ingest/nsys/...", "ingest/sanitizer", "ingest/ingesttest", "synth", "redact"}},
		{"machinery", "sorting, containers, interning", []string{"analyze/internal/..."}},
		{"analysis", "one trace", []string{"analyze"}},
		{"over analyses", "jobs, diffs, gates", []string{
			"analyze/multirank", "analyze/compare", "analyze/gate", "analyze/analyzetest"}},
		{"reports", "writers", []string{"report", "report/export"}},
		{"program parts", "the opener, batches, the GPU reproducer", []string{
			"cmd/umtrace/internal/opener", "cmd/umtrace/internal/batch", "reproducer"}},
		{"program", "the CLI", []string{"cmd/umtrace"}},
	}
}

// onlyFrom: packages that only the named packages may import.
var onlyFrom = map[string][]string{
	"reproducer": {"cmd/umtrace"}, // cgo; the opener finds nsys through internal/nsysbin
}

// layerOf is the index in layers of the layer that holds pkg, or -1.
func layerOf(ls []layer, pkg string) int {
	for i, l := range ls {
		for _, p := range l.pkgs {
			if sub, ok := strings.CutSuffix(p, "/..."); ok && (pkg == sub || strings.HasPrefix(pkg, sub+"/")) || p == pkg {
				return i
			}
		}
	}
	return -1
}

// imports lists the module's packages (paths below the module) and the
// module packages each imports, tests left out.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	g := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := rel(f[0])
		g[pkg] = nil
		for _, imp := range f[1:] {
			if r := rel(imp); r != imp {
				g[pkg] = append(g[pkg], r)
			}
		}
	}
	return g
}

func rel(p string) string {
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return p
}

// TestLayers: the module's import graph keeps to layers().
func TestLayers(t *testing.T) {
	for _, v := range violations(layers(), imports(t)) {
		t.Error(v)
	}
}

// violations lists what breaks the layers in import graph g: a package in
// no layer, an import up a layer, an import of a package of onlyFrom from
// elsewhere, an import cycle, a layer naming a package g lacks.
func violations(ls []layer, g map[string][]string) []string {
	var vs []string
	for _, pkg := range slices.Sorted(maps.Keys(g)) {
		li := layerOf(ls, pkg)
		if li < 0 {
			vs = append(vs, fmt.Sprintf("%s is in no layer: add it to layers() in internal/archtest/layers_test.go and the picture in docs/architecture.md", pkg))
			continue
		}
		for _, imp := range g[pkg] {
			if lj := layerOf(ls, imp); lj > li {
				vs = append(vs, fmt.Sprintf("%s (layer %q) imports %s of the higher layer %q", pkg, ls[li].name, imp, ls[lj].name))
			}
			if allowed, ok := onlyFrom[imp]; ok && !slices.Contains(allowed, pkg) {
				vs = append(vs, fmt.Sprintf("%s imports %s, which only %v may import", pkg, imp, allowed))
			}
		}
	}
	if c := cycle(g); c != nil {
		vs = append(vs, "import cycle: "+strings.Join(c, " -> "))
	}
	for _, l := range ls {
		for _, p := range l.pkgs {
			if _, ok := g[p]; !ok && !strings.HasSuffix(p, "/...") {
				vs = append(vs, fmt.Sprintf("layer %q names %s, which is not a package of the module", l.name, p))
			}
		}
	}
	return vs
}

// TestViolations: each kind of break is found in a made-up graph.
func TestViolations(t *testing.T) {
	ls := []layer{{"low", "", []string{"low", "low/..."}}, {"high", "", []string{"high", "top", "gone"}}}
	g := map[string][]string{
		"low":        {"top"}, // up a layer
		"top":        nil,
		"low/a":      {"low/b"},                      // same layer: fine
		"low/b":      {"low/a"},                      // ... but a cycle
		"high":       {"low", "low/a", "reproducer"}, // down: fine, but reproducer is onlyFrom
		"stray":      nil,                            // in no layer
		"high/other": nil,                            // in no layer either
	}
	got := strings.Join(violations(ls, g), "\n")
	for _, want := range []string{
		`low (layer "low") imports top of the higher layer "high"`,
		"import cycle: low/a -> low/b -> low/a",
		"stray is in no layer",
		"high/other is in no layer",
		`layer "high" names gone`,
		"high imports reproducer, which only [cmd/umtrace] may import",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 6 {
		t.Errorf("%d violations, want 6:\n%s", n, got)
	}
}

// cycle returns an import cycle of g (its packages in order, the first
// repeated at the end), or nil.
func cycle(g map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(p string) []string
	visit = func(p string) []string {
		state[p] = open
		stack = append(stack, p)
		for _, q := range g[p] {
			switch state[q] {
			case open:
				i := slices.Index(stack, q)
				return append(slices.Clone(stack[i:]), q)
			case unseen:
				if c := visit(q); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[p] = done
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(g)) {
		if state[p] == unseen {
			if c := visit(p); c != nil {
				return c
			}
		}
	}
	return nil
}

func TestCycle(t *testing.T) {
	if c := cycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": nil}); len(c) != 4 || c[0] != c[3] {
		t.Errorf("cycle a->b->c->a: got %v", c)
	}
	if c := cycle(map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil}); c != nil {
		t.Errorf("no cycle: got %v", c)
	}
}

// TestNoSQLiteDependency keeps the cgo SQLite driver out of analyze and
// report: they read traces only through ingest.Source.
func TestNoSQLiteDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/analyze", module+"/report").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "sqlite") {
			t.Errorf("analyze/report depend on %s", dep)
		}
	}
}

// picture is the mermaid diagram of layers that docs/architecture.md
// shows: one box a layer, top to bottom, each importing from the ones
// below.
func picture(ls []layer) string {
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TB\n")
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		fmt.Fprintf(&b, "  L%d[\"<b>%s</b>: %s<br/>%s\"]\n", i, l.name, l.about, strings.Join(l.pkgs, ", "))
	}
	for i := len(ls) - 1; i > 0; i-- {
		fmt.Fprintf(&b, "  L%d --> L%d\n", i, i-1)
	}
	b.WriteString("```\n")
	return b.String()
}

// TestLayersPicture: docs/architecture.md draws the layers of layers().
func TestLayersPicture(t *testing.T) {
	doc := filepath.Join("..", "..", "docs", "architecture.md")
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := picture(layers())
	if !strings.Contains(string(data), want) {
		t.Errorf("%s does not draw the layers of internal/archtest (write this in place of its layers diagram):\n%s", path.Clean(doc), want)
	}
}
