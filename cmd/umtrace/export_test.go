package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func exportedIDs(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, "summary"))
	var ids []string
	for _, e := range ents {
		ids = append(ids, strings.TrimPrefix(e.Name(), "trace_id="))
	}
	return ids
}

func TestExportLayoutAndShards(t *testing.T) {
	traces := archTraces(t)
	out := t.TempDir()
	for _, sh := range []string{"1/2", "2/2"} {
		if code, _, stderr := archRun("export", traces, "--out-dir", out, "--shard", sh, "-q"); code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", sh, code, stderr)
		}
	}
	ids := exportedIDs(t, out)
	if strings.Join(ids, ",") != "torch_mlp_device,torch_mlp_managed,um_pingpong_default,um_pingpong_explicit,um_pingpong_prefetch" {
		t.Errorf("partitions %v", ids)
	}
	for _, table := range []string{"api", "kernel", "memcpy", "gpu_fault", "cpu_fault", "nvtx", "gpu", "summary"} {
		for _, id := range ids {
			if !fileExists(filepath.Join(out, table, "trace_id="+id, "part-0.parquet")) {
				t.Errorf("missing %s/trace_id=%s", table, id)
			}
		}
	}
	// One shard alone holds only its part.
	one := t.TempDir()
	archRun("export", traces, "--out-dir", one, "--shard", "2/2", "-q")
	if got := exportedIDs(t, one); strings.Join(got, ",") != "torch_mlp_managed,um_pingpong_explicit" {
		t.Errorf("shard 2/2 = %v", got)
	}
	// Same input, same bytes.
	again := t.TempDir()
	archRun("export", filepath.Join(traces, "um_pingpong_prefetch.sqlite"), "--out-dir", again, "-q")
	a, _ := os.ReadFile(filepath.Join(out, "memcpy", "trace_id=um_pingpong_prefetch", "part-0.parquet"))
	b, _ := os.ReadFile(filepath.Join(again, "memcpy", "trace_id=um_pingpong_prefetch", "part-0.parquet"))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("export not byte-identical")
	}
}

func TestExportArrowClashAndBadInput(t *testing.T) {
	traces := archTraces(t)
	in := t.TempDir()
	archBadInputs(t, traces, in)
	os.MkdirAll(filepath.Join(in, "a"), 0o755)
	os.MkdirAll(filepath.Join(in, "b"), 0o755)
	archLink(t, traces, filepath.Join(in, "a"), "um_pingpong_prefetch")
	archLink(t, traces, filepath.Join(in, "b"), "um_pingpong_explicit")
	os.Rename(filepath.Join(in, "b", "um_pingpong_explicit.sqlite"), filepath.Join(in, "b", "um_pingpong_prefetch.sqlite"))
	out := t.TempDir()
	code, _, stderr := archRun("export", in, "--out-dir", out, "--format", "arrow")
	if code != exitBadInput || !strings.Contains(stderr, "3 of 5 inputs failed") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ids := exportedIDs(t, out)
	if len(ids) != 2 || !strings.HasPrefix(ids[0], "um_pingpong_prefetch-") || ids[0] == ids[1] {
		t.Errorf("clashing names give ids %v", ids)
	}
	if !fileExists(filepath.Join(out, "api", "trace_id="+ids[0], "part-0.arrow")) {
		t.Error("no arrow file")
	}
	if code, _, _ := archRun("export", in); code != exitUsage {
		t.Errorf("no --out: exit %d", code)
	}
	if code, _, _ := archRun("export", in, "--out-dir", out, "--format", "csv"); code != exitUsage {
		t.Errorf("bad format: exit %d", code)
	}
}
