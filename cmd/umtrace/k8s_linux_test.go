package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// indexedJob is what TestKubernetesIndexedJob reads from the manifest:
// spec.completions, the container's env values and its shell command
// (the block scalar under args).
type indexedJob struct {
	completions int
	indexed     bool
	env         map[string]string
	script      string
}

// parseIndexedJob reads scripts/k8s/umtrace-batch-job.yaml's few fields
// by their lines (go.mod has no YAML library; the file is ours).
func parseIndexedJob(t *testing.T, data string) indexedJob {
	t.Helper()
	j := indexedJob{env: map[string]string{}}
	lines := strings.Split(data, "\n")
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	nameRE := regexp.MustCompile(`^\s*- name: (\S+)\s*$`)
	valueRE := regexp.MustCompile(`^\s*value: "?([^"]*)"?\s*$`)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trim := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trim, "completions:"):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(trim, "completions:")))
			if err != nil {
				t.Fatalf("completions: %v", err)
			}
			j.completions = n
		case trim == "completionMode: Indexed":
			j.indexed = true
		case nameRE.MatchString(l) && i+1 < len(lines) && valueRE.MatchString(lines[i+1]):
			j.env[nameRE.FindStringSubmatch(l)[1]] = valueRE.FindStringSubmatch(lines[i+1])[1]
		case trim == "args:" && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "- |":
			dash := indent(lines[i+1])
			var body []string
			k := i + 2
			for ; k < len(lines) && (strings.TrimSpace(lines[k]) == "" || indent(lines[k]) > dash); k++ {
				body = append(body, lines[k])
			}
			cut := indent(body[0])
			for n, b := range body {
				if len(b) >= cut {
					body[n] = b[cut:]
				}
			}
			j.script = strings.TrimRight(strings.Join(body, "\n"), "\n") + "\n"
			i = k - 1
		}
	}
	return j
}

// TestKubernetesIndexedJob runs the command of
// scripts/k8s/umtrace-batch-job.yaml for every completion index, as the
// Job's pods would (JOB_COMPLETION_INDEX 0..completions-1, the manifest's
// SHARDS; ARCHIVE and OUT pointed at temporary directories), merges the
// shards with batch --merge and compares every file with a single batch.
func TestKubernetesIndexedJob(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testshared.Root(), "scripts", "k8s", "umtrace-batch-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j := parseIndexedJob(t, string(data))
	if !j.indexed || j.completions < 2 || j.script == "" {
		t.Fatalf("manifest: completionMode Indexed %v, completions %d, command %q", j.indexed, j.completions, j.script)
	}
	if j.env["SHARDS"] != strconv.Itoa(j.completions) {
		t.Fatalf("manifest: SHARDS=%q, want spec.completions (%d)", j.env["SHARDS"], j.completions)
	}
	for _, v := range []string{"ARCHIVE", "OUT"} {
		if j.env[v] == "" {
			t.Fatalf("manifest sets no %s", v)
		}
	}
	if !strings.Contains(j.script, "JOB_COMPLETION_INDEX") || !strings.Contains(j.script, "--shard") {
		t.Fatalf("the command does not shard by JOB_COMPLETION_INDEX:\n%s", j.script)
	}
	work := t.TempDir()
	archive := mergeInputs(t, filepath.Join(work, "archive"))
	bin := t.TempDir()
	umtrace := umtraceCommand(t, bin)
	out := filepath.Join(work, "out")
	for i := range j.completions {
		cmd := exec.Command("/bin/sh", "-c", j.script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), "SHARDS="+j.env["SHARDS"], "ARCHIVE="+archive, "OUT="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pod %d: %v\n%s", i, err, b)
		}
		// Index i is shard i+1.
		if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("shard-%d", i+1), fmt.Sprintf("summary-shard-%d-of-%d.parquet", i+1, j.completions))); err != nil {
			t.Errorf("pod %d: %v", i, err)
		}
	}
	shards, _ := filepath.Glob(filepath.Join(out, "shard-*"))
	run := func(args ...string) (int, string) {
		cmd := exec.Command(umtrace, args...)
		cmd.Dir = work
		var o bytes.Buffer
		cmd.Stdout = &o
		cmd.Run()
		return cmd.ProcessState.ExitCode(), o.String()
	}
	mcode, mout := run(append([]string{"batch", "--merge", "-q", "--out-dir", filepath.Join(out, "merged")}, shards...)...)
	scode, sout := run("batch", archive, "-q", "--out-dir", filepath.Join(work, "single"))
	if mcode != scode || mout != sout {
		t.Errorf("merge: exit %d, stdout:\n%s\nsingle batch: exit %d, stdout:\n%s", mcode, mout, scode, sout)
	}
	sameTree(t, treeFiles(t, filepath.Join(work, "single")), treeFiles(t, filepath.Join(out, "merged")), nil)
}

// TestArchivesDocShowsTestedScripts: docs/archives.md shows the tested
// job script and Job command: every line of the sbatch file but its
// comments (the #SBATCH lines kept), and the manifest's command, appear
// there in order.
func TestArchivesDocShowsTestedScripts(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testshared.Root(), "docs", "archives.md"))
	if err != nil {
		t.Fatal(err)
	}
	sbatch, err := os.ReadFile(filepath.Join(testshared.Root(), "scripts", "slurm", "umtrace-batch.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(testshared.Root(), "scripts", "k8s", "umtrace-batch-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inOrder := func(what string, lines []string) {
		rest := string(doc)
		for _, l := range lines {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			k := strings.Index(rest, l)
			if k < 0 {
				t.Errorf("docs/archives.md lacks %s's line %q (in this order)", what, l)
				return
			}
			rest = rest[k+len(l):]
		}
	}
	var sb []string
	for _, l := range strings.Split(string(sbatch), "\n") {
		if !strings.HasPrefix(l, "#") || strings.HasPrefix(l, "#!") || strings.HasPrefix(l, "#SBATCH") {
			sb = append(sb, l)
		}
	}
	inOrder("scripts/slurm/umtrace-batch.sbatch", sb)
	var cmd []string
	for _, l := range strings.Split(parseIndexedJob(t, string(manifest)).script, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			cmd = append(cmd, l)
		}
	}
	inOrder("scripts/k8s/umtrace-batch-job.yaml's command", cmd)
}
