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

// TestGCHeadroom: the soft limit leaves 48 MiB (or a tenth) above the live
// heap while a trace is read and 32 MiB (or a twentieth) after, never
// below the floor nor above the ceiling (gc.go).
func TestGCHeadroom(t *testing.T) {
	const mib = 1 << 20
	tu := &gcTuner{floor: 128 * mib, ceiling: 4096 * mib}
	for _, c := range []struct {
		reads      int
		live, want int64
	}{
		{1, 200 * mib, 248 * mib},
		{0, 200 * mib, 232 * mib},
		{2, 1000 * mib, 1100 * mib},
		{0, 1000 * mib, 1050 * mib},
		{0, 10 * mib, 128 * mib},    // the floor
		{1, 4000 * mib, 4096 * mib}, // the ceiling
	} {
		tu.reads = c.reads
		if got := tu.limit(c.live); got != c.want {
			t.Errorf("reads %d, live %d MiB: limit %d MiB, want %d", c.reads, c.live/mib, got/mib, c.want/mib)
		}
	}
	tu.reads = 0
	tu.reading(true)
	tu.reading(true)
	tu.reading(false)
	if tu.reads != 1 {
		t.Errorf("after two reads began and one ended: %d reads, want 1", tu.reads)
	}
}
