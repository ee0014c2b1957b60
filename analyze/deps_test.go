package analyze_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoSQLiteDependency keeps the cgo SQLite driver out of analyze and
// report: they read traces only through ingest.Source.
func TestNoSQLiteDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/umtrace/umtrace/analyze", "github.com/umtrace/umtrace/report").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "sqlite") {
			t.Errorf("analyze/report depend on %s", dep)
		}
	}
}
