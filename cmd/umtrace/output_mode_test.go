package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestReportFileMode: files written with -o (and --junit) get mode 0644
// less the umask, like any file a tool writes, not os.CreateTemp's 0600.
func TestReportFileMode(t *testing.T) {
	trace := tracePath(t, "um_pingpong_prefetch")
	for _, mask := range []int{0o022, 0o027, 0o077} {
		old := syscall.Umask(mask)
		dir := t.TempDir()
		rep, sum, junit := filepath.Join(dir, "r.html"), filepath.Join(dir, "gate.md"), filepath.Join(dir, "gate.xml")
		code1, _, e1 := archRun("analyze", trace, "-o", rep)
		code2, _, e2 := archRun("gate", trace, "-o", sum, "--junit", junit)
		syscall.Umask(old)
		if code1 != exitOK || code2 != exitOK {
			t.Fatalf("umask %03o: exit %d %d: %s%s", mask, code1, code2, e1, e2)
		}
		want := os.FileMode(0o644 &^ mask)
		for _, p := range []string{rep, sum, junit} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != want {
				t.Errorf("umask %03o: %s has mode %v, want %v", mask, filepath.Base(p), st.Mode().Perm(), want)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 3 {
			t.Errorf("umask %03o: stray files in the output directory: %v", mask, ents)
		}
	}
}

// TestReproduceMultiOutDir: the multi-rank reproduce writes a directory,
// so it takes --out-dir like every such command (--out is the old name).
func TestReproduceMultiOutDir(t *testing.T) {
	code, stdout, _ := archRun("reproduce", "--scenario", "multi-process", "--help")
	if code != exitOK || !strings.Contains(stdout, "--out-dir") {
		t.Errorf("help: exit %d, no --out-dir:\n%s", code, stdout)
	}
	if code, _, stderr := archRun("reproduce", "--scenario", "multi-process", "--out", "a", "--out-dir", "b"); code != exitUsage || !strings.Contains(stderr, "disagree") {
		t.Errorf("--out and --out-dir: exit %d %s", code, stderr)
	}
	if code, _, stderr := archRun("reproduce", "--scenario", "multi-process", "-o", "a"); code != exitUsage || !strings.Contains(stderr, "--out-dir") {
		t.Errorf("-o: exit %d %s", code, stderr)
	}
}

// TestTextHintMatchesREADME: the text report's hint names the binary the
// way the README's examples do.
func TestTextHintMatchesREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testshared.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	trace := tracePath(t, "um_pingpong_prefetch")
	t.Chdir(filepath.Dir(trace))
	code, stdout, _ := archRun("analyze", filepath.Base(trace))
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	const hint = "Full report: bin/umtrace analyze um_pingpong_prefetch.sqlite -o report.md"
	if !strings.Contains(stdout, hint) {
		t.Errorf("text report lacks %q:\n%s", hint, stdout)
	}
	if !strings.Contains(string(readme), "The examples below run `bin/umtrace`") || !strings.Contains(string(readme), "bin/umtrace analyze run.sqlite -o ") {
		t.Error("README no longer runs bin/umtrace in its examples: make the hint match")
	}
}

// TestTextHintRuns: the text report's closing hint names the trace as it
// was given (directory included, quoted for the shell when needed), and
// the command it gives runs and writes the report.
func TestTextHintRuns(t *testing.T) {
	b, err := os.ReadFile(tracePath(t, "um_pingpong_prefetch"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "my runs"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "my runs", "it's.sqlite"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, stdout, stderr := archRun("analyze", "my runs/it's.sqlite")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const want = `Full report: bin/umtrace analyze 'my runs/it'\''s.sqlite' -o report.md (or -o report.html)`
	if !strings.Contains(stdout, want) {
		t.Fatalf("no runnable hint %q in:\n%s", want, stdout)
	}
	// Run the hint through a shell, with bin/umtrace standing for this
	// test binary's run: the shell's words are the arguments.
	cmdline := strings.TrimSuffix(strings.TrimPrefix(want, "Full report: bin/umtrace "), " (or -o report.html)")
	words, err := exec.Command("sh", "-c", `for a in `+cmdline+`; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Skipf("no POSIX shell: %v", err)
	}
	args := strings.Split(strings.TrimSuffix(string(words), "\x00"), "\x00")
	if code, _, stderr := archRun(args...); code != exitOK {
		t.Fatalf("the hint's command %q: exit %d: %s", args, code, stderr)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "report.md")); err != nil || !strings.Contains(string(md), "it's.sqlite") {
		t.Errorf("the hint's command wrote no report: %v", err)
	}
}
