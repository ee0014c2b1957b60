package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestAnalyzeDirOfUnrelatedTraces: five separate programs recorded one
// after another are not a job (issue 27): each is analyzed alone, with a
// note saying why, and keeps the verdict it has alone.
func TestAnalyzeDirOfUnrelatedTraces(t *testing.T) {
	dir := archTraces(t)
	code, js, stderr := archRun("analyze", dir, "-f", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s struct {
		Kind    string `json:"kind"`
		Note    string `json:"note"`
		Verdict string `json:"verdict"`
		Results []struct {
			Trace struct {
				File string `json:"file"`
			} `json:"trace"`
			Verdict string `json:"verdict"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	if s.Kind != "separate" || !strings.Contains(s.Note, "do not overlap in time") || len(s.Results) != 5 {
		t.Fatalf("kind %q, note %q, %d results", s.Kind, s.Note, len(s.Results))
	}
	want := map[string]string{ // the shared README's verdicts, each alone
		"um_pingpong_default.sqlite": "storm", "um_pingpong_prefetch.sqlite": "no_storm", "um_pingpong_explicit.sqlite": "no_storm",
		"torch_mlp_managed.sqlite": "storm", "torch_mlp_device.sqlite": "no_storm",
	}
	for _, r := range s.Results {
		if want[r.Trace.File] != r.Verdict {
			t.Errorf("%s: %s, want %s", r.Trace.File, r.Verdict, want[r.Trace.File])
		}
	}
	if code, md, _ := archRun("analyze", dir, "-f", "md"); code != exitOK || !strings.Contains(md, "Not one job: their recordings do not overlap") || strings.Contains(md, "umtrace job:") {
		t.Errorf("markdown (exit %d) should say why they are not a job:\n%.600s", code, md)
	}
	// --job forces the job; --no-job with --job is a usage error.
	if code, md, _ := archRun("analyze", dir, "--job", "-f", "md"); code != exitOK || !strings.Contains(md, "umtrace job: 5 ranks") {
		t.Errorf("--job: exit %d\n%.300s", code, md)
	}
	if code, _, _ := archRun("analyze", dir, "--job", "--no-job"); code != exitUsage {
		t.Errorf("--job --no-job: exit %d", code)
	}
}

// TestRankFilesStayAJob: the reproducer's two-GPU job (two files recorded
// at once, RANK 0 and 1) is still one job with the storm on rank 1; with
// --no-job each file is analyzed alone.
func TestRankFilesStayAJob(t *testing.T) {
	r0 := testshared.Testdata("reproducer", "multi", "multi-gpu.rank0.sqlite")
	r1 := testshared.Testdata("reproducer", "multi", "multi-gpu.rank1.sqlite")
	code, text, stderr := archRun("analyze", r0, r1)
	if code != exitOK || !strings.Contains(text, "umtrace job: 2 ranks") || !strings.Contains(text, "storm on rank 1 of 2") {
		t.Fatalf("exit %d: %s\n%.400s", code, stderr, text)
	}
	code, text, _ = archRun("analyze", r0, r1, "--no-job")
	if code != exitOK || !strings.Contains(text, "2 separate traces") || !strings.Contains(text, "--no-job was given") {
		t.Errorf("--no-job: exit %d\n%.400s", code, text)
	}
	// One file of several processes is one recording: a job, unless --no-job.
	mp := testshared.Testdata("reproducer", "multi", "multi-process.sqlite")
	if code, text, _ := archRun("analyze", mp); code != exitOK || !strings.Contains(text, "umtrace job:") {
		t.Errorf("multi-process file: exit %d\n%.300s", code, text)
	}
	if code, text, _ := archRun("analyze", mp, "--no-job"); code != exitOK || strings.Contains(text, "umtrace job:") {
		t.Errorf("multi-process file, --no-job: exit %d\n%.300s", code, text)
	}
}
