package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

var updateSanitizer = flag.Bool("update-sanitizer", false, "rewrite cmd/umtrace/testdata/sanitizer golden files")

// sanShared returns ../shared/sanitizer relative to the working directory
// (found by walking up to go.mod), so output that names the logs is the same
// on every machine; it skips the test when the directory is absent.
func sanShared(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testshared.Need(t, "sanitizer", "memcheck.txt")
	rel, err := filepath.Rel(wd, testshared.SharedDir())
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func sanGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "sanitizer", name)
	if *updateSanitizer {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -run TestSanitizer ./cmd/umtrace -update-sanitizer)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n%s", name, got)
	}
}

func TestSanitizerGolden(t *testing.T) {
	sh := sanShared(t)
	h200 := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(sh, "sanitizer", n))
		}
		return out
	}
	ext := func(n string) string { return filepath.Join(sh, "external", "sanitizer", n) }
	all := h200("memcheck.txt", "memcheck.xml", "racecheck.txt", "initcheck.txt", "synccheck.txt")
	tests := []struct {
		name string
		args []string
	}{
		{"h200.txt", all},
		{"h200.md", append([]string{"--format", "md"}, all...)},
		{"h200.json", append([]string{"--format=json"}, all...)},
		{"external.txt", []string{
			ext("cuda-memcheck_memcheck_invalid-global-write_tpbarron-cuda_ann.txt"),
			ext("issue_ORNL-HeCBench-133_compute-sanitizer_racecheck_max-hazards.txt"),
			ext("issue_kokkos-6217_compute-sanitizer_racecheck_warning_G-lineinfo.txt"),
			ext("issue_kokkos-1958_cuda-memcheck_synccheck_barrier-error.txt"),
			ext("file_md-info-fused-residual-rmsnorm_compute-sanitizer_memcheck_clean.log"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(&stdout, &stderr, append([]string{"sanitizer"}, tc.args...)); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			sanGolden(t, tc.name, stdout.Bytes())
			sanGolden(t, tc.name+".stderr", stderr.Bytes())
			// Same input, same bytes.
			var again bytes.Buffer
			run(&again, &bytes.Buffer{}, append([]string{"sanitizer"}, tc.args...))
			if !bytes.Equal(again.Bytes(), stdout.Bytes()) {
				t.Error("second run differs")
			}
		})
	}
}

func TestSanitizerOutputFile(t *testing.T) {
	sh := sanShared(t)
	log := filepath.Join(sh, "sanitizer", "racecheck.txt")
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	if code := run(&stdout, &stderr, []string{"sanitizer", log, "--format", "json", "-o", out}); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 || stderr.Len() != 0 {
		t.Errorf("stdout %q stderr %q, want both empty", stdout.String(), stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var direct bytes.Buffer
	run(&direct, &stderr, []string{"sanitizer", "--format", "json", log})
	if !bytes.Equal(got, direct.Bytes()) || !bytes.Contains(got, []byte(`"hazards": 4096`)) {
		t.Errorf("-o file:\n%s", got)
	}
	// An output that cannot be written is exit 4.
	stderr.Reset()
	if code := run(&stdout, &stderr, []string{"sanitizer", log, "-o", filepath.Join(t.TempDir(), "no", "such", "dir")}); code != exitInternal {
		t.Errorf("unwritable -o: exit %d, want %d", code, exitInternal)
	}
}

func TestSanitizerErrors(t *testing.T) {
	dir := t.TempDir()
	notLog := filepath.Join(dir, "bugs.cu")
	if err := os.WriteFile(notLog, []byte("int main() { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.log")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"sanitizer"}, exitUsage, "no LOG given"},
		{[]string{"sanitizer", "--format", "pdf", notLog}, exitUsage, `--format "pdf"`},
		{[]string{"sanitizer", "--bogus", notLog}, exitUsage, "unknown flag"},
		{[]string{"sanitizer", missing}, exitBadInput, missing},
		{[]string{"sanitizer", notLog}, exitBadInput, notLog + ": not a compute-sanitizer or cuda-memcheck log"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(&stdout, &stderr, tc.args)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr.String())
		}
		if tc.code == exitBadInput && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line", tc.args, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: stderr %q, want it to contain %q", tc.args, stderr.String(), tc.msg)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", tc.args, stdout.String())
		}
	}
}

// Endless input (/dev/zero: no line break, ever) ends with exit 3 and one
// line naming the file and the limit, once sanitizer.MaxLineBytes are read.
func TestSanitizerEndlessInput(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero is Linux's")
	}
	want := "/dev/zero: line 1 longer than 64 MiB without a line break"
	for _, args := range [][]string{
		{"sanitizer", "/dev/zero"},
		{"analyze", testshared.Testdata("traces", "um_pingpong_default.sqlite"), "--sanitizer", "/dev/zero"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(&stdout, &stderr, args); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitBadInput, stderr.String())
		}
		if strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr %q, want one line with %q", args, stderr.String(), want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", args, stdout.String())
		}
	}
}
