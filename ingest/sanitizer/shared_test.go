package sanitizer

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedDir returns ../shared/SUB next to the repository root (found by
// walking up to go.mod), or skips the test when it is absent.
func sharedDir(t testing.TB, sub ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root (go.mod) not found")
		}
		dir = parent
	}
	p := filepath.Join(append([]string{dir, "..", "shared"}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data not available: %v", err)
	}
	return p
}

func parseShared(t *testing.T, sub ...string) *Log {
	t.Helper()
	p := sharedDir(t, sub...)
	l, err := ParseFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
