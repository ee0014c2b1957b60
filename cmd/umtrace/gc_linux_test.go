package main

import (
	"regexp"
	"runtime"
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

// TestGCMinAbove: the limit's room above the live heap is 48 MiB up to two
// cores and 24 MiB a core beyond (docs/performance.md, "GC soft limit").
func TestGCMinAbove(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		procs int
		want  int64
	}{{1, 48 << 20}, {2, 48 << 20}, {4, 96 << 20}, {16, 384 << 20}} {
		runtime.GOMAXPROCS(c.procs)
		if got := gcMinAbove(); got != c.want {
			t.Errorf("GOMAXPROCS=%d: %d MiB above the live heap, want %d", c.procs, got>>20, c.want>>20)
		}
	}
}
