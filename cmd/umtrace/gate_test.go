package main

import (
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
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
	if code, _, _ := archRun("gate", tr("torch_mlp_managed"), "--max-fault-rate", "off", "--max-storm-share", "20%", "--max-fault-latency-per-page", "200us"); code != exitOK {
		t.Errorf("flag override: exit %d", code)
	}
	// The former flag name still works (with a deprecation note).
	if code, _, stderr := archRun("gate", tr("torch_mlp_managed"), "--max-fault-rate", "off", "--max-storm-share", "20%", "--max-migration-latency-per-page", "200us"); code != exitOK || !strings.Contains(stderr, "--max-fault-latency-per-page") {
		t.Errorf("old flag: exit %d %s", code, stderr)
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

// gateJSON runs gate with -f json and decodes the outcome.
func gateJSON(t *testing.T, args ...string) (int, gateOut) {
	t.Helper()
	code, stdout, stderr := archRun(append([]string{"gate", "-f", "json"}, args...)...)
	var o gateOut
	if err := json.Unmarshal([]byte(stdout), &o); err != nil {
		t.Fatalf("gate %v: exit %d, JSON: %v\n%s%s", args, code, err, stdout, stderr)
	}
	return code, o
}

type gateOut struct {
	Status  string `json:"status"`
	Failed  int    `json:"failed"`
	Unknown int    `json:"unknown"`
	Checks  []struct {
		Trace, Check, Metric, Kind, Unit, Status, Detail string
		Value, Limit                                     float64
		Baseline                                         *float64 `json:"baseline_value"`
	} `json:"checks"`
	Thresholds map[string]*float64 `json:"thresholds"`
}

func (o gateOut) status(metric, kind string) string {
	for _, c := range o.Checks {
		if c.Metric == metric && c.Kind == kind {
			return c.Status
		}
	}
	return "absent"
}

// TestGateSharedVerdicts: with the default limits each shared trace gets
// the verdict traces/README.md gives it (storm → FAIL on every fault
// check, no storm → PASS), and the values are the trace's own figures.
func TestGateSharedVerdicts(t *testing.T) {
	traces := archTraces(t)
	for _, tc := range []struct {
		name  string
		storm bool
	}{{"um_pingpong_default", true}, {"torch_mlp_managed", true}, {"um_pingpong_prefetch", false}, {"um_pingpong_explicit", false}, {"torch_mlp_device", false}} {
		p := filepath.Join(traces, tc.name+".sqlite")
		code, o := gateJSON(t, p)
		want, wantStatus, wantCheck := exitOK, "PASS", "pass"
		if tc.storm {
			want, wantStatus, wantCheck = exitFail, "FAIL", "fail"
		}
		if code != want || o.Status != wantStatus || len(o.Checks) != 3 {
			t.Errorf("%s: exit %d status %s, %d checks; want %d %s", tc.name, code, o.Status, len(o.Checks), want, wantStatus)
		}
		for _, m := range []string{"fault-rate", "fault-latency-per-page", "storm-share"} {
			if s := o.status(m, "limit"); s != wantCheck {
				t.Errorf("%s: %s %s, want %s", tc.name, m, s, wantCheck)
			}
		}
		// The latency per page is the GPU fault groups' time over their pages, read here by SQL.
		db, err := sql.Open("sqlite3", "file:"+p+"?mode=ro&immutable=1")
		if err != nil {
			t.Fatal(err)
		}
		var ns, pages sql.NullFloat64
		db.QueryRow(`SELECT sum("end"-start), sum(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS`).Scan(&ns, &pages)
		db.Close()
		wantLat := 0.0
		if pages.Float64 > 0 {
			wantLat = ns.Float64 / pages.Float64
		}
		for _, c := range o.Checks {
			if c.Metric == "fault-latency-per-page" && math.Abs(c.Value-wantLat) > 1e-6*wantLat {
				t.Errorf("%s: latency per page %v, SQL says %v", tc.name, c.Value, wantLat)
			}
			if tc.storm && c.Value <= c.Limit {
				t.Errorf("%s: %s value %v not above limit %v", tc.name, c.Metric, c.Value, c.Limit)
			}
		}
	}
}

// noFaultCopy copies a shared trace and rewrites what it says about
// page-fault collection: "off" sets the capture flags false and drops
// the fault tables (as nsys without --cuda-um-*-page-faults), "unrecorded"
// also deletes the flags (an export that does not say).
func noFaultCopy(t *testing.T, src, dir, mode string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".sqlite")+"_faults_"+mode+".sqlite")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	qs := []string{`UPDATE META_DATA_CAPTURE SET value = 'false' WHERE name LIKE '%:COLLECT_UVM_%_PAGE_FAULTS'`,
		`DROP TABLE IF EXISTS CUDA_UM_GPU_PAGE_FAULT_EVENTS`, `DROP TABLE IF EXISTS CUDA_UM_CPU_PAGE_FAULT_EVENTS`}
	if mode == "unrecorded" {
		qs = append(qs, `DELETE FROM META_DATA_CAPTURE WHERE name LIKE '%:COLLECT_UVM_%_PAGE_FAULTS'`)
	}
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestGateUnknownFaults: a trace recorded without page-fault collection
// cannot pass the fault checks: they are unknown, which fails the gate
// unless --allow-unknown; a recorded figure above a limit still fails.
func TestGateUnknownFaults(t *testing.T) {
	traces := archTraces(t)
	dir := t.TempDir()
	for _, mode := range []string{"off", "unrecorded"} {
		p := noFaultCopy(t, filepath.Join(traces, "um_pingpong_prefetch.sqlite"), dir, mode)
		code, o := gateJSON(t, p)
		// The storm share is unknown too: without page faults analyze
		// cannot rule a storm out (insufficient_data), as gate cannot.
		if code != exitFail || o.Status != "UNKNOWN" || o.Unknown != 3 || o.Failed != 0 ||
			o.status("fault-rate", "limit") != "unknown" || o.status("fault-latency-per-page", "limit") != "unknown" || o.status("storm-share", "limit") != "unknown" {
			t.Errorf("%s: exit %d %+v", mode, code, o)
		}
		code, o = gateJSON(t, p, "--allow-unknown")
		if code != exitOK || o.Status != "PASS" || o.Unknown != 3 {
			t.Errorf("%s --allow-unknown: exit %d %+v", mode, code, o)
		}
		j := filepath.Join(dir, mode+".xml")
		archRun("gate", p, "--junit", j)
		if doc := gateJUnit(t, j); doc.Failures != 3 || doc.Tests != 3 {
			t.Errorf("%s junit %+v", mode, doc)
		}
		archRun("gate", p, "--junit", j, "--allow-unknown")
		if doc := gateJUnit(t, j); doc.Failures != 0 || doc.Tests != 3 || len(doc.Suites) != 1 || doc.Suites[0].Skipped != 3 {
			t.Errorf("%s junit --allow-unknown %+v", mode, doc)
		}
	}
	// The storm trace without fault tables: faults unknown, but the storm
	// (seen in the migrations) fails with or without --allow-unknown.
	p := noFaultCopy(t, filepath.Join(traces, "um_pingpong_default.sqlite"), dir, "off")
	code, o := gateJSON(t, p, "--allow-unknown")
	if code != exitFail || o.Status != "FAIL" || o.status("storm-share", "limit") != "fail" || o.status("fault-rate", "limit") != "unknown" {
		t.Errorf("storm without faults: exit %d %+v", code, o)
	}
	// A real export made with fault collection off (nsys 2023.4, UM migrations only).
	ext := testshared.Need(t, "external", "nsys", "easycuda_2023.4.4_um-memcpy_nsys_easy.sqlite")
	if code, o := gateJSON(t, ext); code != exitFail || o.status("fault-rate", "limit") != "unknown" {
		t.Errorf("easycuda: exit %d %+v", code, o)
	}
	if code, _, stderr := archRun("gate", ext, "--allow-unknown"); code != exitOK {
		t.Errorf("easycuda --allow-unknown: exit %d %s", code, stderr)
	}
}

// TestGateBaselineOnly: with every absolute limit off the baseline
// checks are listed and decide on their own.
func TestGateBaselineOnly(t *testing.T) {
	traces := archTraces(t)
	tr := func(n string) string { return filepath.Join(traces, n+".sqlite") }
	off := []string{"--max-fault-rate", "off", "--max-fault-latency-per-page", "off", "--max-storm-share", "off", "--max-sync-p99", "off"}
	code, o := gateJSON(t, append([]string{tr("um_pingpong_default"), "--baseline", tr("um_pingpong_prefetch")}, off...)...)
	if code != exitFail || len(o.Checks) != 4 {
		t.Fatalf("regression vs baseline: exit %d %+v", code, o)
	}
	for _, c := range o.Checks {
		// Every metric of the storm trace is above the fixed one's (sync P99 17.0 ms vs 375 µs).
		if c.Kind != "baseline" || c.Status != "fail" || c.Baseline == nil || c.Value <= c.Limit {
			t.Errorf("baseline check %+v", c)
		}
	}
	code, o = gateJSON(t, append([]string{tr("torch_mlp_device"), "--baseline", tr("torch_mlp_managed")}, off...)...)
	if code != exitOK || len(o.Checks) != 4 || o.Failed != 0 {
		t.Errorf("improvement vs baseline: exit %d %+v", code, o)
	}
	// Nothing left to check is a usage error, not a silent pass.
	if code, _, stderr := archRun(append([]string{"gate", tr("torch_mlp_device")}, off...)...); code != exitUsage || !strings.Contains(stderr, "nothing to gate") {
		t.Errorf("all off: exit %d %s", code, stderr)
	}
}

// TestGatePercentFlags: --max-storm-share takes 50 and 50% alike (a
// number without % is percent); a bad value is a clean usage error.
func TestGatePercentFlags(t *testing.T) {
	trace := tracePath(t, "um_pingpong_default") // storm share well under 50 %, over 0.5 %
	for _, v := range []string{"50", "50%"} {
		if code, _, stderr := archRun("gate", trace, "--max-fault-rate", "off", "--max-fault-latency-per-page", "off", "--max-storm-share", v); code != exitOK {
			t.Errorf("--max-storm-share %s: exit %d: %s", v, code, stderr)
		}
	}
	if code, _, _ := archRun("gate", trace, "--max-fault-rate", "off", "--max-fault-latency-per-page", "off", "--max-storm-share", "0.5"); code != exitFail {
		t.Errorf("--max-storm-share 0.5 (0.5 %%): exit %d, want %d", code, exitFail)
	}
	for _, k := range []string{"--max-storm-share", "--max-fault-rate", "--max-regression", "--max-sync-p99"} {
		code, _, stderr := archRun("gate", trace, k, "abc")
		if code != exitUsage || strings.Contains(stderr, "strconv") || strings.Contains(stderr, "invalid syntax") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s abc: exit %d, want %d and one clean line: %q", k, code, exitUsage, stderr)
		}
	}
}
