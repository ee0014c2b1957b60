package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/synth"
)

func runSynth(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(&out, &errb, append([]string{"synth"}, args...))
	return code, out.String(), errb.String()
}

func TestSynthWritesTraceAndTruth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.sqlite")
	small := []string{"--steps", "40", "--kernels-per-step", "4", "--episodes", "1", "--episode-steps", "3", "--decoys", "1", "--decoy-steps", "2", "--seed", "5"}
	code, out, errs := runSynth(t, append([]string{path}, small...)...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "wrote "+path) || !strings.Contains(out, "verdict storm") {
		t.Errorf("stdout %q", out)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "run.truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr synth.Truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Seed != 5 || tr.Config.Steps != 40 || len(tr.Episodes) != 1 || len(tr.Decoys) != 3 || tr.TotalRows == 0 {
		t.Errorf("truth %+v", tr)
	}
	// An existing output is refused without --force (a usage error).
	if code, _, errs := runSynth(t, append([]string{path}, small...)...); code != exitUsage || !strings.Contains(errs, "--force") {
		t.Errorf("rerun: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runSynth(t, append([]string{path, "--force", "-q"}, small...)...); code != exitOK {
		t.Errorf("--force: exit %d, stderr %q", code, errs)
	}
}

func TestSynthRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.sqlite")
	code, _, errs := runSynth(t, path, "--rows", "150000", "-q")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "r.truth.json"))
	var tr synth.Truth
	json.Unmarshal(b, &tr)
	if tr.TotalRows < 135000 || tr.TotalRows > 165000 {
		t.Errorf("--rows 150000 gave %d rows", tr.TotalRows)
	}
}

func TestSynthUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"a.sqlite", "b.sqlite"},
		{filepath.Join(dir, "x.sqlite"), "--no-such-flag"},
		{filepath.Join(dir, "x.sqlite"), "--rows", "100", "--steps", "10"},
		{filepath.Join(dir, "x.sqlite"), "--steps", "10"}, // too short for the default episodes
		{filepath.Join(dir, "x.sqlite"), "--streams", "0"},
	} {
		if code, _, errs := runSynth(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.sqlite")); err == nil {
		t.Errorf("a failed run left its output")
	}
}

// TestSynthJobCLI: synth --ranks writes a job as rank files or, with
// --one-file, as one trace of several processes; analyze of either names
// the storm rank and charges the others' wait to it.
func TestSynthJobCLI(t *testing.T) {
	dir := t.TempDir()
	small := []string{"--ranks", "3", "--storm-rank", "1", "--steps", "40", "--episodes", "1", "--episode-steps", "6", "--decoys", "0", "-q"}
	one := filepath.Join(dir, "job.sqlite")
	many := filepath.Join(dir, "ranks")
	for _, args := range [][]string{append([]string{one, "--one-file"}, small...), append([]string{many}, small...)} {
		if code, _, errs := runSynth(t, args...); code != exitOK {
			t.Fatalf("synth %v: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, _, errs := runSynth(t, append([]string{one, "--one-file"}, small...)...); code != exitUsage || !strings.Contains(errs, "--force") {
		t.Errorf("rerun: exit %d, stderr %q", code, errs)
	}
	var tr synth.JobTruth
	b, _ := os.ReadFile(synth.TruthPath(one))
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.Pids) != 3 || tr.StormRank != 1 {
		t.Fatalf("truth %s: %v", b, err)
	}
	for _, args := range [][]string{{one}, {synth.RankFile(many, 2), synth.RankFile(many, 0), synth.RankFile(many, 1)}} {
		var out, errb bytes.Buffer
		if code := run(&out, &errb, append([]string{"analyze", "--format", "json"}, args...)); code != exitOK {
			t.Fatalf("analyze %v: exit %d: %s", args, code, errb.String())
		}
		var jr struct {
			Kind       string `json:"kind"`
			Stragglers []struct {
				Rank   int   `json:"rank"`
				WaitNs int64 `json:"wait_ns"`
			} `json:"stragglers"`
			Ranks []struct {
				Rank    int    `json:"rank"`
				Verdict string `json:"verdict"`
			} `json:"ranks"`
		}
		if err := json.Unmarshal(out.Bytes(), &jr); err != nil {
			t.Fatal(err)
		}
		if jr.Kind != "job" || len(jr.Ranks) != 3 || len(jr.Stragglers) != 1 || jr.Stragglers[0].Rank != 1 || jr.Stragglers[0].WaitNs <= 0 {
			t.Errorf("analyze %v: %+v", args, jr)
		}
		for _, r := range jr.Ranks {
			if (r.Verdict == "storm") != (r.Rank == 1) {
				t.Errorf("analyze %v: rank %d verdict %s", args, r.Rank, r.Verdict)
			}
		}
	}
}

// TestSynthJobCLIDefaults: with --ranks the CLI starts from the job's
// per-rank defaults (one episode, no decoys), so a short job that the
// single-trace defaults (three episodes and decoys) refuse is written.
func TestSynthJobCLIDefaults(t *testing.T) {
	dir := t.TempDir()
	job := synth.DefaultJobConfig().Rank
	steps := fmt.Sprint(job.MinSteps())
	if single := synth.DefaultConfig; single.MinSteps() <= job.MinSteps() {
		t.Fatalf("single-trace defaults need %d steps, the job's %d: nothing to tell apart", single.MinSteps(), job.MinSteps())
	}
	if code, _, errs := runSynth(t, filepath.Join(dir, "one.sqlite"), "--steps", steps, "-q"); code != exitUsage || !strings.Contains(errs, "need at least") {
		t.Errorf("single trace, %s steps: exit %d, stderr %q; want the usage error", steps, code, errs)
	}
	for _, ranks := range []string{"--ranks=2", "--ranks"} {
		out := filepath.Join(dir, strings.TrimLeft(ranks, "-="))
		args := []string{out, ranks, "--steps", steps, "-q"}
		if ranks == "--ranks" {
			args = []string{out, ranks, "2", "--steps", steps, "-q"}
		}
		if code, _, errs := runSynth(t, args...); code != exitOK {
			t.Fatalf("synth %v: exit %d, stderr %q", args, code, errs)
		}
		var tr synth.JobTruth
		b, err := os.ReadFile(synth.JobTruthPath(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Fatal(err)
		}
		c := tr.Config.Rank
		if tr.Config.Ranks != 2 || c.Steps != job.MinSteps() || c.Episodes != job.Episodes || c.EpisodeSteps != job.EpisodeSteps || c.LongKernelDecoys+c.PrefetchDecoys+c.SyncBurstDecoys != 0 || len(tr.Files) != 2 {
			t.Errorf("synth %v: job truth config %+v, files %v", args, tr.Config, tr.Files)
		}
	}
}
