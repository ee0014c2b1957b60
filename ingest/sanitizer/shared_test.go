package sanitizer

import (
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// sharedDir returns the shared SUB (testshared: ../shared or
// $UMTRACE_SHARED), or skips the test when it is absent.
func sharedDir(t testing.TB, sub ...string) string {
	t.Helper()
	return testshared.Need(t, sub...)
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
