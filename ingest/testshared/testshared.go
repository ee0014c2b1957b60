// Package testshared finds the test inputs that live outside a package
// directory: the repository's testdata/ and the read-only shared material
// (real nsys exports and sanitizer logs) beside the clone in ../shared.
//
// UMTRACE_SHARED names another shared directory. Tests that need shared
// material skip when it is absent (Need, Skip). go test runs each package
// in its own process and shows a passing package's output only with -v, so
// the summary is `make test`'s: it sets UMTRACE_SKIPLOG to a file, each
// skip appends a line to it, and make prints one line at the end,
// "umtrace: shared material absent (...): N tests in M packages skipped".
package testshared

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var root = sync.OnceValue(func() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
})

// Root is the module's root directory ("" when not found).
func Root() string { return root() }

// Testdata is a path under the repository's testdata/.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{root(), "testdata"}, elem...)...)
}

// SharedDir is the shared directory: $UMTRACE_SHARED, else ../shared beside
// the clone. It may not exist.
func SharedDir() string {
	if d := os.Getenv("UMTRACE_SHARED"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(root()), "shared")
}

// Path is a path under the shared directory, whether or not it exists.
func Path(elem ...string) string {
	return filepath.Join(append([]string{SharedDir()}, elem...)...)
}

// Available reports whether the shared path exists.
func Available(elem ...string) bool {
	_, err := os.Stat(Path(elem...))
	return err == nil
}

// Need returns the shared path, skipping the test when it is absent.
func Need(t testing.TB, elem ...string) string {
	t.Helper()
	p := Path(elem...)
	if _, err := os.Stat(p); err != nil {
		Skip(t, p)
	}
	return p
}

// Skip skips the test because the shared path p is absent, recording the
// skip for make test's summary line.
func Skip(t testing.TB, p string) {
	t.Helper()
	record(t.Name())
	t.Skipf("shared material absent (%s); set UMTRACE_SHARED or clone beside ../shared", p)
}

// Where describes the shared directory for the summary line.
func Where() string {
	if d := os.Getenv("UMTRACE_SHARED"); d != "" {
		return "UMTRACE_SHARED=" + d
	}
	return SharedDir()
}

var logMu sync.Mutex

// record appends "package<TAB>test<TAB>Where()" to $UMTRACE_SKIPLOG.
func record(test string) {
	log := os.Getenv("UMTRACE_SKIPLOG")
	if log == "" {
		return
	}
	pkg := "."
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(root(), wd); err == nil {
			pkg = rel
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\t%s\n", pkg, test, Where())
}

// CopyFile copies src to dst (a test's private copy of a trace, to damage
// or plant rows in; inputs are never modified in place).
func CopyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
