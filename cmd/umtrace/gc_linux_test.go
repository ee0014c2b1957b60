package main

import (
	"regexp"
	"testing"
)

// TestGCPacedByLimit: unless GOGC is set, the soft limit alone paces the
// collector (gc.go): a small trace, whose analysis allocates about 70 MB,
// is analyzed with one collection, at the limit's 64 MiB floor; with
// GOGC=100 the same run collects every few MB from start-up on.
func TestGCPacedByLimit(t *testing.T) {
	cycle := regexp.MustCompile(`(?m)^gc \d+ @`)
	gcs := func(env ...string) int {
		env = append([]string{"UMTRACE_SUPERVISE=0", "GODEBUG=gctrace=1"}, env...)
		_, stderr, code := umtraceProc(t, "", env, "analyze", "../../testdata/traces/um_pingpong_default.sqlite", "-f", "json", "-o", "/dev/null")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return len(cycle.FindAllString(stderr, -1))
	}
	t.Setenv("GOGC", "")
	limit, percent := gcs(), gcs("GOGC=100")
	if limit > 1 {
		t.Errorf("GOGC unset: %d collections, want at most 1", limit)
	}
	if percent < 4 {
		t.Errorf("GOGC=100: %d collections, want several (the test would not tell the settings apart)", percent)
	}
}
