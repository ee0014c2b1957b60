package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// mergeInputs makes a directory of real traces (the bundled ones, and the
// shared torch traces when present) and bad files, so shards hold storms,
// no-storms and failures.
func mergeInputs(t *testing.T, in string) string {
	t.Helper()
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, n := range []string{"um_pingpong_default", "um_pingpong_explicit", "um_pingpong_prefetch"} {
		srcs = append(srcs, testshared.Testdata("traces", n+".sqlite"))
	}
	for _, n := range []string{"torch_mlp_managed", "torch_mlp_device"} {
		if p := testshared.Path("traces", n+".sqlite"); fileExists(p) {
			srcs = append(srcs, p)
		}
	}
	for _, p := range srcs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(in, "empty.sqlite"), nil, 0o644)
	os.WriteFile(filepath.Join(in, "text.sqlite"), []byte("this is not a trace\n"), 0o644)
	return in
}

// treeFiles returns every regular file under dir, by relative path.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree fails unless got holds exactly want's files, byte for byte
// (names for which skip returns true are left out of got).
func sameTree(t *testing.T, want, got map[string][]byte, skip func(string) bool) {
	t.Helper()
	bad := false
	errorf := func(format string, a ...any) { t.Helper(); bad = true; t.Errorf(format, a...) }
	var names []string
	for n := range got {
		if skip == nil || !skip(n) {
			names = append(names, n)
			if _, ok := want[n]; !ok {
				errorf("merged output has %s; the single run has not", n)
			}
		}
	}
	for n, w := range want {
		g, ok := got[n]
		switch {
		case !ok:
			errorf("merged output lacks %s", n)
		case !bytes.Equal(g, w):
			errorf("%s differs from the single run's (%d bytes, want %d)", n, len(g), len(w))
		}
	}
	if bad {
		slices.Sort(names)
		t.Logf("merged files: %v", names)
	}
}

// TestBatchMergeEqualsSingleRun shards a batch (separate output
// directories, and one shared by all shards), merges it, and compares
// every file and the summary on stdout with an unsharded batch.
func TestBatchMergeEqualsSingleRun(t *testing.T) {
	work := t.TempDir()
	mergeInputs(t, filepath.Join(work, "in"))
	t.Chdir(work)                             // relative arguments, as in a Slurm array
	args := []string{"in", "nomatch*.sqlite"} // a glob that matches nothing: a row from shard 1 only
	code, singleOut, stderr := archRun(append([]string{"batch", "--out-dir", "single", "-q", "-j", "2", "-f", "csv"}, args...)...)
	if code != exitBadInput {
		t.Fatalf("single batch: exit %d, want %d (two bad files); stderr:\n%s", code, exitBadInput, stderr)
	}
	single := treeFiles(t, "single")
	failedLine := stderr[strings.Index(stderr, ": ")+2 : strings.Index(stderr, " (listed")] // "3 of 8 inputs failed"
	// 9: more shards than inputs, some of them empty. (The Slurm and
	// Kubernetes tests merge 4 shards.)
	for _, n := range []int{3, 9} {
		shareDir := n == 3
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			var dirs []string
			for i := 1; i <= n; i++ {
				d := fmt.Sprintf("n%d/shard%d", n, i)
				dirs = append(dirs, d)
				code, _, stderr := archRun(append([]string{"batch", "--out-dir", d, "-q", "-j", "2", "--shard", fmt.Sprintf("%d/%d", i, n)}, args...)...)
				if code != exitOK && code != exitBadInput {
					t.Fatalf("shard %d/%d: exit %d; stderr:\n%s", i, n, code, stderr)
				}
				if shareDir { // tasks sharing one --out-dir (docs/archives.md)
					archRun(append([]string{"batch", "--out-dir", fmt.Sprintf("n%d/shared", n), "-q", "-j", "2", "--shard", fmt.Sprintf("%d/%d", i, n)}, args...)...)
				}
			}
			merged := fmt.Sprintf("n%d/merged", n)
			code, out, stderr := archRun(append([]string{"batch", "--merge", "--out-dir", merged, "-f", "csv"}, dirs...)...)
			if code != exitBadInput {
				t.Fatalf("merge: exit %d, want %d as the single run; stderr:\n%s", code, exitBadInput, stderr)
			}
			if out != singleOut {
				t.Errorf("merged summary on stdout differs:\n%s\nsingle run:\n%s", out, singleOut)
			}
			if !strings.Contains(stderr, fmt.Sprintf("merged %d shards", n)) || !strings.Contains(stderr, failedLine) {
				t.Errorf("stderr: %s", stderr)
			}
			sameTree(t, single, treeFiles(t, merged), nil)

			if !shareDir {
				return
			}
			shared := fmt.Sprintf("n%d/shared", n)
			if code, _, stderr := archRun("batch", "--merge", shared, "--out-dir", shared, "-q", "-o", shared+"/merged.md"); code != exitBadInput {
				t.Fatalf("merge in the shared directory: exit %d; stderr:\n%s", code, stderr)
			}
			sameTree(t, single, treeFiles(t, shared), func(name string) bool {
				return strings.HasPrefix(name, "summary-shard-") || name == "merged.md"
			})
			md, _ := os.ReadFile(shared + "/merged.md")
			if !bytes.Equal(md, single["summary.md"]) {
				t.Errorf("-o merged.md differs from the single run's summary.md")
			}
		})
	}
}

// TestBatchMergeShardProblems: merges of shards that are not the N
// shards of one run say what is wrong and exit 3; flags of an analysis
// are usage errors (exit 2).
func TestBatchMergeShardProblems(t *testing.T) {
	in := mergeInputs(t, t.TempDir())
	other := t.TempDir()
	for _, n := range []string{"um_pingpong_default.sqlite", "empty.sqlite"} {
		data, _ := os.ReadFile(filepath.Join(in, n))
		os.WriteFile(filepath.Join(other, n), data, 0o644)
	}
	work := t.TempDir()
	t.Chdir(work)
	shard := func(dir, spec string, inputs ...string) {
		t.Helper()
		code, _, stderr := archRun(append([]string{"batch", "--out-dir", dir, "-q", "-j", "2", "--shard", spec}, inputs...)...)
		if code != exitOK && code != exitBadInput {
			t.Fatalf("shard %s: exit %d; stderr:\n%s", spec, code, stderr)
		}
	}
	for i := 1; i <= 3; i++ {
		shard(fmt.Sprintf("s%d", i), fmt.Sprintf("%d/3", i), in)
	}
	shard("s2again", "2/3", in)
	shard("half", "1/2", in)
	shard("otherinputs", "3/3", other)
	shard("nomanifest", "3/3", in)
	os.Remove("nomanifest/summary-shard-3-of-3.manifest.json")
	os.MkdirAll("empty", 0o755)
	os.WriteFile("notadir", nil, 0o644)

	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing", []string{"s1", "s3"}, exitBadInput, []string{"1 of 3 shards missing: 2/3"}},
		{"two missing", []string{"s2"}, exitBadInput, []string{"2 of 3 shards missing: 1/3, 3/3"}},
		{"duplicated", []string{"s1", "s2", "s2again", "s3"}, exitBadInput, []string{"shards found twice: 2/3 (s2/summary-shard-2-of-3.parquet, s2again/summary-shard-2-of-3.parquet)"}},
		{"missing and duplicated", []string{"s1", "s1/../s1", "s2", "s2again"}, exitBadInput, []string{"shards missing: 3/3", "shards found twice: 2/3"}},
		{"other N", []string{"s1", "s2", "s3", "half"}, exitBadInput, []string{"N differs", "of 2: half/summary-shard-1-of-2.parquet"}},
		{"other inputs", []string{"s1", "s2", "otherinputs"}, exitBadInput, []string{"shard 3/3 (otherinputs) saw other inputs"}},
		{"no manifest", []string{"s1", "s2", "nomanifest"}, exitBadInput, []string{"shard 3/3 (nomanifest) has no summary-shard-3-of-3.manifest.json, shard 1/3 (s1) has one"}},
		{"no summaries", []string{"s1", "s2", "s3", "empty"}, exitBadInput, []string{"empty: no shard summaries"}},
		{"not a directory", []string{"notadir"}, exitBadInput, []string{"notadir: "}},
		{"no arguments", nil, exitUsage, []string{"--merge wants the shards' output directories"}},
		{"analysis flag", []string{"s1", "s2", "s3", "--shard", "1/3", "--top", "3"}, exitUsage, []string{"not --shard, --top"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := archRun(append([]string{"batch", "--merge", "--out-dir", "m-" + strings.ReplaceAll(c.name, " ", "-")}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("want one line on stderr:\n%s", stderr)
			}
		})
	}

	// A shard whose per-trace files are gone cannot be merged into another directory.
	os.RemoveAll("s1/traces")
	code, _, stderr := archRun("batch", "--merge", "s1", "s2", "s3", "--out-dir", "m-lost", "-q")
	if code != exitBadInput || !strings.Contains(stderr, "shard 1/3") || !strings.Contains(stderr, "incomplete") {
		t.Errorf("merge without shard 1's traces/: exit %d; stderr:\n%s", code, stderr)
	}
}
