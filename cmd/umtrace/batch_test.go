package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// archTraces returns the shared traces directory, skipping the test when
// it is absent.
func archTraces(t *testing.T) string {
	t.Helper()
	testshared.Need(t, "traces", "um_pingpong_default.sqlite")
	return testshared.Path("traces")
}

// archRun runs umtrace with args and returns the exit code, stdout and stderr.
func archRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(&out, &errb, args)
	return code, out.String(), errb.String()
}

// archBadInputs writes an empty file, a text file and a truncated copy of
// a real trace into dir.
func archBadInputs(t *testing.T, traces, dir string) {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "empty.sqlite"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "text.sqlite"), []byte("this is not a trace\n"), 0o644)
	data, err := os.ReadFile(filepath.Join(traces, "um_pingpong_prefetch.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "truncated.sqlite"), data[:len(data)/3], 0o644)
}

func archLink(t *testing.T, traces, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		abs, _ := filepath.Abs(filepath.Join(traces, n+".sqlite"))
		if err := os.Symlink(abs, filepath.Join(dir, n+".sqlite")); err != nil {
			t.Fatal(err)
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestBatchContinuesPastBadFilesAndCaches(t *testing.T) {
	traces := archTraces(t)
	in, out := t.TempDir(), t.TempDir()
	archBadInputs(t, traces, in)
	archLink(t, traces, in, "um_pingpong_default", "um_pingpong_prefetch", "torch_mlp_device")

	code, stdout, stderr := archRun("batch", in, "--out-dir", out, "-j", "2")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitBadInput, stderr)
	}
	for _, want := range []string{"## Failed inputs", "| empty |", "| text |", "| truncated |", "um_pingpong_default | storm"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if string(md) != stdout {
		t.Error("summary.md differs from stdout")
	}
	recs := readCSV(t, filepath.Join(out, "summary.csv"))
	if len(recs) != 7 {
		t.Fatalf("csv has %d records, want header + 6", len(recs))
	}
	var verdicts []string
	for _, r := range recs[1:] {
		verdicts = append(verdicts, r[1])
		if r[1] == "error" && r[len(r)-1] == "" {
			t.Errorf("failure %s without reason", r[0])
		}
	}
	if got := strings.Join(verdicts, ","); got != "storm,no_storm,no_storm,error,error,error" {
		t.Errorf("verdict order %s", got)
	}
	if recs[1][0] != "um_pingpong_default" {
		t.Errorf("first row %v", recs[1])
	}
	for _, f := range []string{"summary.parquet", "traces/um_pingpong_default.md", "traces/um_pingpong_default.json", "traces/torch_mlp_device.json"} {
		if !fileExists(filepath.Join(out, f)) {
			t.Errorf("missing %s", f)
		}
	}
	if !strings.Contains(stderr, "3 analyzed, 0 cached, 3 failed") {
		t.Errorf("stderr: %s", stderr)
	}

	// Second run: every good trace comes from the cache; same summary.
	code, stdout2, stderr := archRun("batch", in, "--out-dir", out)
	if code != exitBadInput || stdout2 != stdout {
		t.Errorf("rerun: exit %d, summary changed: %v", code, stdout2 != stdout)
	}
	if !strings.Contains(stderr, "0 analyzed, 3 cached, 3 failed") {
		t.Errorf("rerun stderr: %s", stderr)
	}
	// --force redoes them.
	_, stdout3, stderr := archRun("batch", in, "--out-dir", out, "--force")
	if !strings.Contains(stderr, "3 analyzed, 0 cached, 3 failed") || stdout3 != stdout {
		t.Errorf("--force stderr: %s", stderr)
	}
	// Changed content under the same name is re-analyzed.
	os.Remove(filepath.Join(in, "torch_mlp_device.sqlite"))
	archLink(t, traces, in, "um_pingpong_explicit")
	os.Rename(filepath.Join(in, "um_pingpong_explicit.sqlite"), filepath.Join(in, "torch_mlp_device.sqlite"))
	_, _, stderr = archRun("batch", in, "--out-dir", out)
	if !strings.Contains(stderr, "1 analyzed, 2 cached, 3 failed") {
		t.Errorf("changed content stderr: %s", stderr)
	}
}

func TestBatchAllGoodExitsZero(t *testing.T) {
	traces := archTraces(t)
	out := t.TempDir()
	code, _, stderr := archRun("batch", filepath.Join(traces, "um_pingpong_*.sqlite"), "--out-dir", out, "-q")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if recs := readCSV(t, filepath.Join(out, "summary.csv")); len(recs) != 4 {
		t.Errorf("%d csv records", len(recs))
	}
}

func TestBatchShards(t *testing.T) {
	traces := archTraces(t)
	out := t.TempDir()
	seen := map[string]int{}
	for _, sh := range []string{"1/2", "2/2"} {
		code, _, stderr := archRun("batch", traces, "--out-dir", out, "--shard", sh, "-q")
		if code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", sh, code, stderr)
		}
		name := "summary-shard-" + strings.Replace(sh, "/", "-of-", 1) + ".csv"
		for _, r := range readCSV(t, filepath.Join(out, name))[1:] {
			seen[r[0]]++
		}
	}
	if len(seen) != 5 {
		t.Errorf("shards cover %d traces, want 5: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s in %d shards", id, n)
		}
	}
	// A merge run over the same output finds everything cached.
	code, _, stderr := archRun("batch", traces, "--out-dir", out)
	if code != exitOK || !strings.Contains(stderr, "0 analyzed, 5 cached") {
		t.Errorf("merge run: exit %d: %s", code, stderr)
	}
	if code, _, _ := archRun("batch", traces, "--shard", "3/2"); code != exitUsage {
		t.Errorf("bad shard: exit %d", code)
	}
	if code, _, _ := archRun("batch"); code != exitUsage {
		t.Errorf("no args: exit %d", code)
	}
}
