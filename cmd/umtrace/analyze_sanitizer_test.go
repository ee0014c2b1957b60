package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestAnalyzeWithSanitizer joins a sanitizer finding in the storm trace's
// kernel to its storm episode, and a finding in another program's kernel to
// nothing.
func TestAnalyzeWithSanitizer(t *testing.T) {
	trace := tracePath(t, "um_pingpong_default")
	logs := []string{testshared.Testdata("sanitizer", "touch_oob.txt")}
	if p := testshared.Path("sanitizer", "memcheck.txt"); fileExists(p) {
		logs = append(logs, p)
	}
	args := []string{"analyze", "-f", "json", trace}
	for _, l := range logs {
		args = append(args, "--sanitizer", l)
	}
	var out, errb bytes.Buffer
	if code := run(&out, &errb, args); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res struct {
		Sanitizer struct {
			Logs   []struct{ File string }
			Groups []struct {
				Kernel        string
				Kind          string
				KernelInTrace bool  `json:"kernel_in_trace"`
				StormEpisodes []int `json:"storm_episodes"`
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Sanitizer.Logs) != len(logs) {
		t.Fatalf("logs: %+v", res.Sanitizer.Logs)
	}
	found := map[string]bool{}
	for _, g := range res.Sanitizer.Groups {
		switch g.Kernel {
		case "touch":
			found["touch"] = true
			if !g.KernelInTrace || len(g.StormEpisodes) != 1 || g.StormEpisodes[0] != 1 {
				t.Errorf("touch finding not tied to storm episode 1: %+v", g)
			}
		case "oob_write":
			found["oob_write"] = true
			if g.KernelInTrace || len(g.StormEpisodes) != 0 {
				t.Errorf("oob_write is not in this trace: %+v", g)
			}
		}
	}
	if !found["touch"] || (len(logs) > 1 && !found["oob_write"]) {
		t.Errorf("groups: %+v", res.Sanitizer.Groups)
	}
	var md bytes.Buffer
	run(&md, &errb, append([]string{"analyze", "-f", "md", trace}, args[4:]...))
	if !bytes.Contains(md.Bytes(), []byte("## Sanitizer findings")) || !bytes.Contains(md.Bytes(), []byte("**yes** (1)")) {
		t.Errorf("markdown lacks the sanitizer section:\n%s", md.String())
	}
	if code := run(&out, &errb, []string{"analyze", "--sanitizer", trace, trace}); code != exitBadInput {
		t.Errorf("a trace given as sanitizer log: exit %d, want %d", code, exitBadInput)
	}
}
