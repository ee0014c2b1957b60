package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestOneFileJobReadOnce: a one-file multi-process trace analyzed as a
// job is opened and read once: the opener's one analysis (one "collect"
// phase, the pass that streams every table) gives the whole file and
// each process, and the job is made from that (analyze/multirank's
// TestJobOnePass counts the scans of each table with a counting source).
func TestOneFileJobReadOnce(t *testing.T) {
	mp := testshared.Testdata("reproducer", "multi", "multi-process.sqlite")
	t.Setenv("UMTRACE_PHASES", "1") // the opener sends phase lines to os.Stderr
	phases := filepath.Join(t.TempDir(), "phases")
	f, err := os.Create(phases)
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = f
	code, text, errText := archRun("analyze", mp)
	os.Stderr = stderr
	f.Close()
	if code != exitOK || !strings.Contains(text, "umtrace job:") {
		t.Fatalf("exit %d (%s); want a job report:\n%.300s", code, errText, text)
	}
	data, err := os.ReadFile(phases)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "umtrace: collect "); n != 1 {
		t.Errorf("the file was read %d times, want once:\n%s", n, data)
	}
}

// TestJobExitsLikeSingle: job mode (several files, one file of several
// processes, --job, --no-job) and single-file mode give the same exit code
// for the same bad option or bad input: every one goes through the opener.
func TestJobExitsLikeSingle(t *testing.T) {
	dir := testshared.Testdata("reproducer", "multi")
	r0, r1 := filepath.Join(dir, "multi-gpu.rank0.sqlite"), filepath.Join(dir, "multi-gpu.rank1.sqlite")
	mp := filepath.Join(dir, "multi-process.sqlite")
	text := filepath.Join(t.TempDir(), "text.sqlite")
	if err := os.WriteFile(text, []byte("this is not a trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	modes := map[string][]string{
		"single":                 {r0},
		"rank files":             {r0, r1},
		"rank files --job":       {r0, r1, "--job"},
		"rank files --no-job":    {r0, r1, "--no-job"},
		"multi-process":          {mp},
		"multi-process --no-job": {mp, "--no-job"},
	}
	bad := []struct {
		name string
		args []string
		code int
	}{
		{"a step range the traces lack", []string{"--step-range", "nosuch"}, exitUsage},
		{"--top 0", []string{"--top", "0"}, exitUsage},
		{"--min-overlap 3", []string{"--min-overlap", "3"}, exitUsage},
		{"a missing input", []string{filepath.Join(dir, "nosuch.sqlite")}, exitBadInput},
		{"an input that is not a trace", []string{text}, exitBadInput},
	}
	for _, b := range bad {
		for mode, files := range modes {
			args := append(append([]string{"analyze"}, files...), b.args...)
			if code, _, stderr := archRun(args...); code != b.code {
				t.Errorf("%s, %s: exit %d, want %d as single-file mode (%s)", b.name, mode, code, b.code, strings.TrimSpace(stderr))
			}
		}
	}
}
