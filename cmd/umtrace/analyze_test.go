package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/umtrace/umtrace/ingest/testshared"
)

var update = flag.Bool("update", false, "rewrite golden files (analyze, diff, gate, batch); or UPDATE_GOLDEN=1")

// updating reports whether golden files are to be rewritten: -update or
// UPDATE_GOLDEN=1.
func updating() bool { return *update || os.Getenv("UPDATE_GOLDEN") == "1" }

// tracePath finds a shared trace: the repo's testdata copy when there is
// one, else ../shared/traces (skipping when that is absent).
func tracePath(t *testing.T, name string) string {
	t.Helper()
	p := testshared.Testdata("traces", name+".sqlite")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return testshared.Need(t, "traces", name+".sqlite")
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run UPDATE_GOLDEN=1 go test ./cmd/umtrace)", err)
	}
	if !bytes.Equal(got, want) {
		gotPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".got-" + strings.TrimPrefix(filepath.Ext(path), ".")
		os.WriteFile(gotPath, got, 0o644)
		t.Errorf("%s differs from golden; wrote %s (diff them, or rerun with UPDATE_GOLDEN=1)", path, gotPath)
	}
}

func TestAnalyzeGolden(t *testing.T) {
	for _, name := range []string{"um_pingpong_default", "um_pingpong_prefetch", "um_pingpong_explicit", "torch_mlp_managed", "torch_mlp_device"} {
		for _, format := range []string{"text", "md", "html", "json"} {
			t.Run(name+"."+format, func(t *testing.T) {
				// From the trace's directory, so the text report's hint
				// (the path as given) is the same everywhere.
				path := tracePath(t, name)
				want, err := filepath.Abs(filepath.Join("testdata", "analyze", name+"."+format))
				if err != nil {
					t.Fatal(err)
				}
				t.Chdir(filepath.Dir(path))
				path = filepath.Base(path)
				var out, errb bytes.Buffer
				if code := run(&out, &errb, []string{"analyze", "--format", format, path}); code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				golden(t, want, out.Bytes())
				// Same input, same bytes.
				var again bytes.Buffer
				run(&again, &errb, []string{"analyze", "--format", format, path})
				if !bytes.Equal(out.Bytes(), again.Bytes()) {
					t.Error("two runs gave different output")
				}
			})
		}
	}
}

func TestAnalyzeOutputFileAndFailOnStorm(t *testing.T) {
	path := tracePath(t, "um_pingpong_default")
	out := filepath.Join(t.TempDir(), "r.md")
	var stdout, stderr bytes.Buffer
	code := run(&stdout, &stderr, []string{"analyze", "-f", "md", "-o", out, "--fail-on-storm", path})
	if code != exitFail {
		t.Errorf("exit %d, want %d (storm with --fail-on-storm)", code, exitFail)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(b, []byte("**Verdict: STORM**")) {
		t.Errorf("report file: %v %q", err, b)
	}
	if code := run(&stdout, &stderr, []string{"analyze", "--fail-on-storm", tracePath(t, "um_pingpong_prefetch")}); code != exitOK {
		t.Errorf("no-storm trace exit %d", code)
	}
	if code := run(&stdout, &stderr, []string{"analyze", "-o", path, path}); code != exitUsage {
		t.Errorf("-o onto the input: exit %d, want %d", code, exitUsage)
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile(tracePath(t, "um_pingpong_explicit"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cases := []struct {
		name, path, msg string
		code            int
	}{
		{"empty", write("empty.sqlite", nil), "empty file", exitBadInput},
		{"text", write("notes.txt", []byte("just some text\n")), "not a SQLite database", exitBadInput},
		{"truncated", write("cut.sqlite", good[:len(good)/2]), "truncated SQLite file", exitBadInput},
		{"not nsys", other, "not an Nsight Systems SQLite export", exitBadInput},
		{"missing", filepath.Join(dir, "missing.sqlite"), "no such file or directory", exitBadInput},
		// A directory is a job of its traces: the first bad one (sorted) is named.
		{"directory", dir, "cut.sqlite: truncated SQLite file", exitBadInput},
	}
	if ext := testshared.Path("external", "nsys", "cardiac_2021.3.3_emptytrace_report1.sqlite"); fileExists(ext) {
		cases = append(cases, struct {
			name, path, msg string
			code            int
		}{"no CUDA", ext, "no CUDA activity", exitBadInput})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(c.path)
			var stdout, stderr bytes.Buffer
			code := run(&stdout, &stderr, []string{"analyze", c.path})
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.path) || !strings.Contains(msg, c.msg) {
				t.Errorf("stderr %q: want one line naming %s and %q", msg, c.path, c.msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
			after, _ := os.ReadFile(c.path)
			if !bytes.Equal(before, after) {
				t.Error("input modified")
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run(&stdout, &stderr, []string{"analyze"}); code != exitUsage {
		t.Errorf("no args: exit %d", code)
	}
	if code := run(&stdout, &stderr, []string{"analyze", "--format", "pdf", "x"}); code != exitUsage {
		t.Errorf("bad format: exit %d", code)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestInsufficientData edits copies of the storm trace so that page faults
// and migration causes can no longer be seen.
func TestInsufficientData(t *testing.T) {
	src, err := os.ReadFile(tracePath(t, "um_pingpong_default"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, sql, reason string
	}{
		{"no faults, no causes", `DROP TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS; DROP TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS;
			DELETE FROM META_DATA_CAPTURE; UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET migrationCause = NULL`, "no recorded cause"},
		{"managed memory only", `DROP TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS; DROP TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS;
			DELETE FROM META_DATA_CAPTURE; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY`, "--cuda-um-gpu-page-faults=true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "edited.sqlite")
			if err := os.WriteFile(p, src, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			var out, errb bytes.Buffer
			if code := run(&out, &errb, []string{"analyze", "-f", "json", p}); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var res struct {
				Verdict string
				Reason  string `json:"verdict_reason"`
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Verdict != "insufficient_data" || !strings.Contains(res.Reason, c.reason) {
				t.Errorf("verdict %s (%s), want insufficient_data mentioning %q", res.Verdict, res.Reason, c.reason)
			}
		})
	}
}

// TestAnalyzeOutputToFIFO writes the report into a named pipe, as -o
// /dev/null or /dev/stdout would: the pipe must receive the report and
// stay a pipe (an atomic rename once replaced /dev/null with a file).
func TestAnalyzeOutputToFIFO(t *testing.T) {
	path := tracePath(t, "um_pingpong_default")
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	var stdout, stderr bytes.Buffer
	if code := run(&stdout, &stderr, []string{"analyze", "-f", "json", "-o", fifo, path}); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a pipe: %v", fifo, err) // and its reader waits forever
	}
	if b := <-got; !bytes.Contains(b, []byte(`"verdict": "storm"`)) {
		t.Errorf("the pipe received %d bytes without the verdict", len(b))
	}
}
