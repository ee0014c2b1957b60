//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// copyTrace copies the committed trace name to dir/as.
func copyTrace(t *testing.T, name, dir, as string) string {
	t.Helper()
	b, err := os.ReadFile(tracePath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, as)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// verdictOf analyzes args as JSON and returns the report's verdict and
// trace file names (one trace: its file; a job: every rank's).
func verdictOf(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	code, stdout, stderr := archRun(append([]string{"analyze", "-f", "json"}, args...)...)
	if code != exitOK {
		return code, "", stderr
	}
	var r struct {
		Verdict string
		Trace   struct{ File string }
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return code, r.Verdict, r.Trace.File
}

// TestLiteralNames: a name that exists is the file of that name even
// when it holds glob metacharacters; only a name that does not exist is
// a glob. run[1].sqlite is the storm trace, run1.sqlite (which the glob
// run[1].sqlite matches) the healthy one, so the verdict tells which was
// read.
func TestLiteralNames(t *testing.T) {
	dir := t.TempDir()
	storm := copyTrace(t, "um_pingpong_default", dir, "run[1].sqlite")
	copyTrace(t, "um_pingpong_prefetch", dir, "run1.sqlite")
	star := copyTrace(t, "um_pingpong_default", dir, "a*.sqlite")
	copyTrace(t, "um_pingpong_prefetch", dir, "ab.sqlite")
	for _, p := range []string{storm, star} {
		code, verdict, file := verdictOf(t, p)
		if code != exitOK || verdict != "storm" || file != filepath.Base(p) {
			t.Errorf("analyze %s: exit %d, verdict %q of %q; want the storm trace of that name", filepath.Base(p), code, verdict, file)
		}
	}
	// A glob that names no file matches run1.sqlite only.
	os.Remove(storm)
	if code, _, stderr := archRun("analyze", "-f", "json", storm); code != exitOK {
		t.Errorf("glob run[1].sqlite with run1.sqlite present: exit %d: %s", code, stderr)
	}
	// batch and export take the literal name too: one trace, the storm.
	out := t.TempDir()
	code, stdout, stderr := archRun("batch", star, "--out-dir", out, "-q", "-f", "csv")
	if code != exitOK || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, ",storm,") {
		t.Errorf("batch %s: exit %d: %s%s", star, code, stdout, stderr)
	}
	ds := t.TempDir()
	if code, _, stderr := archRun("export", star, "--out-dir", ds, "-q"); code != exitOK {
		t.Errorf("export %s: exit %d: %s", star, code, stderr)
	}
	parts, _ := filepath.Glob(filepath.Join(ds, "summary", "*"))
	if len(parts) != 1 {
		t.Errorf("export %s: %d summary partitions, want 1: %v", star, len(parts), parts)
	}
}

// TestFIFOInput: a FIFO named like a trace is refused at once (exit 3,
// one line naming it) by analyze, and batch over a directory holding one
// reports it and finishes. Nobody ever writes to the FIFO, so reading it
// would block forever: the runs must return (the limit is generous; this
// is not a timing test).
func TestFIFOInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hang.sqlite")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	copyTrace(t, "um_pingpong_prefetch", dir, "good.sqlite")
	type result struct {
		code           int
		stdout, stderr string
	}
	within := func(args ...string) result {
		t.Helper()
		c := make(chan result, 1)
		go func() {
			code, stdout, stderr := archRun(args...)
			c <- result{code, stdout, stderr}
		}()
		select {
		case r := <-c:
			return r
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s hangs on a FIFO input", strings.Join(args, " "))
			return result{}
		}
	}
	for _, args := range [][]string{{"analyze", fifo}, {"diff", fifo, fifo}, {"gate", fifo}, {"export", fifo, "--out-dir", t.TempDir()}} {
		r := within(args...)
		if r.code != exitBadInput || !strings.Contains(r.stderr, "hang.sqlite: a FIFO") || strings.Count(r.stderr, "\n") > 2 {
			t.Errorf("%s: exit %d, want %d with a line naming the FIFO: %s", args[0], r.code, exitBadInput, r.stderr)
		}
	}
	r := within("batch", dir, "--out-dir", t.TempDir(), "-q", "-f", "csv")
	if r.code != exitBadInput || !strings.Contains(r.stdout, "good") || !strings.Contains(r.stdout, "a FIFO") {
		t.Errorf("batch: exit %d, want %d with the good trace and the FIFO reported:\n%s%s", r.code, exitBadInput, r.stdout, r.stderr)
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO input changed")
	}
}

// TestBatchCSVFormulaName: a trace named =1+2.sqlite reaches summary.csv
// as text a spreadsheet does not evaluate, and the trace's step time,
// which it lacks, is an empty cell.
func TestBatchCSVFormulaName(t *testing.T) {
	dir := t.TempDir()
	copyTrace(t, "um_pingpong_prefetch", dir, "=1+2.sqlite")
	out := t.TempDir()
	if code, _, stderr := archRun("batch", dir, "--out-dir", out, "-q"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs := readCSV(t, filepath.Join(out, "summary.csv"))
	if len(recs) != 2 {
		t.Fatalf("%d records, want header + 1", len(recs))
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[1][i]
	}
	for h, v := range row {
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			t.Errorf("%s cell %q starts a formula", h, v)
		}
	}
	if row["file"] != "'=1+2.sqlite" || row["trace_id"] != "_1_2" { // ids are sanitized
		t.Errorf("trace_id %q, file %q: want _1_2 and the name quoted", row["trace_id"], row["file"])
	}
	if row["verdict"] != "no_storm" || row["episodes"] != "0" || row["worst_episode_ns"] != "" || row["duration_ns"] == "" {
		t.Errorf("figures: %v", row)
	}
}
