package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/internal/nsysbin"
)

// fakeNsys writes an nsys stand-in that checks it was called as
// `nsys export --type sqlite --output OUT IN`, logs its arguments to
// $FAKE_NSYS_LOG and copies $FAKE_NSYS_SRC (a real SQLite export) to OUT.
func fakeNsys(t *testing.T, src string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "nsys")
	log = filepath.Join(dir, "calls.log")
	script := `#!/bin/sh
echo "$@" >> "$FAKE_NSYS_LOG"
if [ "$#" -ne 6 ] || [ "$1" != export ] || [ "$2" != --type ] || [ "$3" != sqlite ] || [ "$4" != --output ]; then
  echo "fake nsys: unexpected arguments: $*" >&2
  exit 9
fi
case "$5" in *.sqlite) ;; *) echo "fake nsys: output $5 is not .sqlite" >&2; exit 9;; esac
[ -f "$6" ] || { echo "fake nsys: no input $6" >&2; exit 9; }
[ -e "$5" ] && { echo "fake nsys: $5 exists" >&2; exit 9; }
cp "$FAKE_NSYS_SRC" "$5"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_NSYS_LOG", log)
	t.Setenv("FAKE_NSYS_SRC", src)
	return bin, log
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// TestNsysRep: a .nsys-rep is exported once by nsys into the cache (never
// beside the input), analyzed exactly as its SQLite export, and the
// export is reused while the report is unchanged.
func TestNsysRep(t *testing.T) {
	sqlite := tracePath(t, "um_pingpong_default")
	bin, log := fakeNsys(t, sqlite)
	cache := t.TempDir()
	t.Setenv("UMTRACE_CACHE_DIR", cache)
	in := t.TempDir()
	rep := filepath.Join(in, "um_pingpong_default.nsys-rep")
	os.WriteFile(rep, []byte("stand-in for an nsys report\n"), 0o644)

	_, want, _ := archRun("analyze", sqlite, "-f", "json")
	code, got, stderr := archRun("analyze", rep, "-f", "json", "--nsys", bin)
	if code != exitOK {
		t.Fatalf("analyze .nsys-rep: exit %d: %s", code, stderr)
	}
	// The report names the file given; all else equals the export's analysis.
	if !strings.Contains(got, `"file": "um_pingpong_default.nsys-rep"`) {
		t.Errorf("the report does not name the .nsys-rep")
	}
	got = strings.ReplaceAll(got, "um_pingpong_default.nsys-rep", "um_pingpong_default.sqlite")
	if got != want {
		t.Errorf("analysis of the .nsys-rep differs from the analysis of its SQLite export")
	}
	c := calls(t, log)
	if len(c) != 1 || !strings.HasPrefix(c[0], "export --type sqlite --output "+cache+string(filepath.Separator)) ||
		!strings.HasSuffix(c[0], " "+rep) {
		t.Fatalf("nsys calls %q; want one export into %s", c, cache)
	}
	if ents, _ := os.ReadDir(in); len(ents) != 1 {
		t.Errorf("the input directory gained files: %v", ents)
	}
	ents, _ := os.ReadDir(cache)
	if len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), ".sqlite") || len(ents[0].Name()) != 64+len(".sqlite") {
		t.Errorf("cache holds %v; want one <sha256>.sqlite", ents)
	}

	// Second run, nsys found through UMTRACE_NSYS: the cache is reused.
	t.Setenv("UMTRACE_NSYS", bin)
	if code, got, stderr := archRun("analyze", rep, "-f", "json"); code != exitOK ||
		strings.ReplaceAll(got, "um_pingpong_default.nsys-rep", "um_pingpong_default.sqlite") != want {
		t.Fatalf("second analyze: exit %d (%s), same output %v", code, stderr, got == want)
	}
	if c := calls(t, log); len(c) != 1 {
		t.Errorf("nsys ran %d times; the cached export should be reused", len(c))
	}

	// batch picks report files up from directories, but not one that has
	// its SQLite export beside it; .qdrep too.
	os.WriteFile(filepath.Join(in, "old.qdrep"), []byte("older report\n"), 0o644)
	os.WriteFile(filepath.Join(in, "twin.nsys-rep"), []byte("twin\n"), 0o644)
	data, _ := os.ReadFile(sqlite)
	os.WriteFile(filepath.Join(in, "twin.sqlite"), data, 0o644)
	out := t.TempDir()
	code, sum, stderr := archRun("batch", in, "--out-dir", out, "-q")
	if code != exitOK {
		t.Fatalf("batch over reports: exit %d: %s", code, stderr)
	}
	for _, id := range []string{"um_pingpong_default", "old", "twin"} {
		if !strings.Contains(sum, "| "+id+" |") {
			t.Errorf("batch summary lacks %s:\n%s", id, sum)
		}
	}
	if strings.Count(sum, "twin") != 1 {
		t.Errorf("twin.nsys-rep and twin.sqlite both analyzed:\n%s", sum)
	}
	if c := calls(t, log); len(c) != 2 || !strings.HasSuffix(c[1], "old.qdrep") {
		t.Errorf("nsys calls %q; want one more, for old.qdrep", c)
	}
}

// TestNsysRepErrors: without nsys, a report is a one-line exit-3 error that
// says how to get a SQLite export; an nsys that fails is exit 3 too.
func TestNsysRepErrors(t *testing.T) {
	t.Setenv("UMTRACE_CACHE_DIR", t.TempDir())
	t.Setenv("UMTRACE_NSYS", "")
	t.Setenv("PATH", t.TempDir())
	rep := filepath.Join(t.TempDir(), "run.nsys-rep")
	os.WriteFile(rep, []byte("report\n"), 0o644)
	if p, _ := nsysbin.Find(""); p != "" {
		t.Skipf("nsys is installed here (%s); the no-nsys message cannot be checked", p)
	}
	code, stdout, stderr := archRun("analyze", rep)
	want := "nsys export --type sqlite --output " + strings.TrimSuffix(rep, ".nsys-rep") + ".sqlite " + rep
	if code != exitBadInput || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "--nsys") || !strings.Contains(stderr, "install") || !strings.Contains(stderr, want) {
		t.Errorf("no nsys: exit %d, stderr %q; want exit 3 naming --nsys, install and %q", code, stderr, want)
	}

	broken := filepath.Join(t.TempDir(), "nsys")
	os.WriteFile(broken, []byte("#!/bin/sh\necho 'ERROR: report is corrupt' >&2\nexit 1\n"), 0o755)
	code, _, stderr = archRun("gate", rep, "--nsys", broken)
	if code != exitBadInput || !strings.Contains(stderr, "report is corrupt") || !strings.Contains(stderr, rep) {
		t.Errorf("failing nsys: exit %d, stderr %q; want exit 3 with its message and the file", code, stderr)
	}
	code, _, stderr = archRun("analyze", rep, "--nsys", filepath.Join(t.TempDir(), "nope"))
	if code != exitUsage || !strings.Contains(stderr, "--nsys") {
		t.Errorf("missing --nsys binary: exit %d, stderr %q; want a usage error", code, stderr)
	}
}

// TestNsysRepDirWithoutNsys: batch and export over a directory of
// reports and no nsys report each report as a bad file, one short line
// each, and go on with the other traces.
func TestNsysRepDirWithoutNsys(t *testing.T) {
	t.Setenv("UMTRACE_CACHE_DIR", t.TempDir())
	t.Setenv("UMTRACE_NSYS", "")
	t.Setenv("PATH", t.TempDir())
	if p, _ := nsysbin.Find(""); p != "" {
		t.Skipf("nsys is installed here (%s)", p)
	}
	in := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(in, n+".nsys-rep"), []byte("report "+n+"\n"), 0o644)
	}
	copyTrace(t, "um_pingpong_prefetch", in, "good.sqlite")
	ds := t.TempDir()
	code, _, stderr := archRun("export", in, "--out-dir", ds, "-q")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != exitBadInput || len(lines) != 4 || !strings.Contains(lines[3], "3 of 4 inputs failed") {
		t.Fatalf("export: exit %d, want %d, 3 lines and a total:\n%s", code, exitBadInput, stderr)
	}
	// Short: at most 250 characters besides the paths.
	for _, l := range lines {
		if l = strings.ReplaceAll(l, in, "D"); len(l) > 250 {
			t.Errorf("export: a %d-character line: %s", len(l), l)
		}
	}
	if _, err := os.Stat(filepath.Join(ds, "summary", "trace_id=good", "part-0.parquet")); err != nil {
		t.Errorf("export did not go on with the good trace: %v", err)
	}
	code, stdout, stderr := archRun("batch", in, "--out-dir", t.TempDir(), "-f", "csv")
	if code != exitBadInput || strings.Count(stdout, ",error,") != 3 || !strings.Contains(stdout, "good,no_storm") {
		t.Errorf("batch: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.ReplaceAll(l, in, "D"); len(l) > 250 {
			t.Errorf("batch: a %d-character line: %s", len(l), l)
		}
	}
}
