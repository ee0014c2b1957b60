package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/report"
)

func gateJUnit(t *testing.T, path string) report.JUnitSuites {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.JUnitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit %s not well-formed: %v", path, err)
	}
	return doc
}

func TestGateExitCodesAndJUnit(t *testing.T) {
	traces := archTraces(t)
	tr := func(n string) string { return filepath.Join(traces, n+".sqlite") }
	dir := t.TempDir()

	// Fixed traces pass the default thresholds.
	j := filepath.Join(dir, "pass.xml")
	code, stdout, stderr := archRun("gate", tr("torch_mlp_device"), tr("um_pingpong_prefetch"), "--junit", j)
	if code != exitOK {
		t.Fatalf("pass: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stdout, "# umtrace gate: PASS") {
		t.Errorf("pass summary:\n%s", stdout)
	}
	if doc := gateJUnit(t, j); doc.Tests != 6 || doc.Failures != 0 || doc.Errors != 0 {
		t.Errorf("pass junit %+v", doc)
	}

	// Storm traces fail the default fault-rate limit.
	j = filepath.Join(dir, "fail.xml")
	sum := filepath.Join(dir, "fail.md")
	code, stdout, _ = archRun("gate", tr("torch_mlp_managed"), tr("um_pingpong_default"), "--junit", j, "-o", sum)
	if code != exitFail || stdout != "" {
		t.Fatalf("fail: exit %d, stdout %q", code, stdout)
	}
	md, _ := os.ReadFile(sum)
	if !archLineHas(string(md), "| torch_mlp_managed | max UM page-fault rate |", "| 120.0 faults/s | **FAIL** |") {
		t.Errorf("fail summary:\n%s", md)
	}
	doc := gateJUnit(t, j)
	if doc.Failures < 2 || doc.Errors != 0 {
		t.Errorf("fail junit %+v", doc)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil && c.Failure.Message == "" {
				t.Errorf("failure without message in %s", c.Name)
			}
		}
	}

	// A flag override and config files loosen the limits.
	if code, _, _ := archRun("gate", tr("torch_mlp_managed"), "--max-fault-rate", "off", "--max-storm-share", "20%"); code != exitOK {
		t.Errorf("flag override: exit %d", code)
	}
	for _, cfg := range []string{"strict.conf", "loose.json"} {
		if code, out, _ := archRun("gate", tr("um_pingpong_default"), "--config", filepath.Join("testdata", "gate", cfg)); code != exitOK {
			t.Errorf("config %s: exit %d\n%s", cfg, code, out)
		}
	}
	// Flags win over the config file.
	if code, _, _ := archRun("gate", tr("um_pingpong_default"), "--config", filepath.Join("testdata", "gate", "loose.json"), "--max-fault-rate", "120"); code != exitFail {
		t.Errorf("flag over config: exit %d", code)
	}

	// Relative to a baseline: the fix does not regress; the storm trace
	// against the fix does.
	if code, out, _ := archRun("gate", tr("torch_mlp_device"), "--baseline", tr("torch_mlp_managed")); code != exitOK {
		t.Errorf("baseline improvement: exit %d\n%s", code, out)
	}
	code, out, _ := archRun("gate", tr("um_pingpong_default"), "--baseline", tr("um_pingpong_prefetch"), "--max-regression", "10%")
	if code != exitFail || !archLineHas(out, "storm time share vs baseline", "(baseline 0.0% +10%) | **FAIL** |") {
		t.Errorf("baseline regression: exit %d\n%s", code, out)
	}
}

// archLineHas reports whether one line of s contains every part.
func archLineHas(s string, parts ...string) bool {
	for _, line := range strings.Split(s, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestGateBadInput(t *testing.T) {
	traces := archTraces(t)
	dir := t.TempDir()
	archBadInputs(t, traces, dir)
	j := filepath.Join(dir, "j.xml")
	code, out, stderr := archRun("gate", filepath.Join(traces, "torch_mlp_device.sqlite"), filepath.Join(dir, "empty.sqlite"),
		filepath.Join(dir, "text.sqlite"), filepath.Join(dir, "truncated.sqlite"), "--junit", j)
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d: %s", code, exitBadInput, stderr)
	}
	if !strings.Contains(out, "**error** empty") || !strings.Contains(out, "**error** truncated") {
		t.Errorf("summary lacks errors:\n%s", out)
	}
	if doc := gateJUnit(t, j); doc.Errors != 3 || doc.Tests != 6 {
		t.Errorf("junit %+v", doc)
	}
	if code, _, _ := archRun("gate"); code != exitUsage {
		t.Errorf("no args: exit %d", code)
	}
	if code, _, _ := archRun("gate", "x.sqlite", "--max-storm-share", "lots"); code != exitUsage {
		t.Errorf("bad threshold: exit %d", code)
	}
	if code, _, _ := archRun("gate", filepath.Join(traces, "torch_mlp_device.sqlite"), "--baseline", filepath.Join(dir, "text.sqlite")); code != exitBadInput {
		t.Errorf("bad baseline: exit %d", code)
	}
}
