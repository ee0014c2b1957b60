// Package analyzetest is the tests' way to open and analyze a trace (the
// program's own is cmd/umtrace/internal/opener.Opener): one helper instead of
// the same open, analyze, fail-on-error lines in every test file.
package analyzetest

import (
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys"
)

// Open opens the nsys SQLite export at path and analyzes it with default
// options, failing the test on any error. The reader stays open (closed
// when the test ends) for tests that read it again.
func Open(t testing.TB, path string) (*nsys.Reader, *analyze.Result) {
	t.Helper()
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	res, err := analyze.Analyze(r, analyze.DefaultOptions())
	if err != nil {
		t.Fatalf("analyze %s: %v", path, err)
	}
	return r, res
}
