package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/report"
)

// chromium finds a headless-capable Chromium, skipping the test without
// one (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the HTML reports are not checked in a browser")
	return ""
}

// browse loads page in headless Chromium and returns the DOM it built and
// the page's console messages (Chromium logs them as CONSOLE lines).
func browse(t *testing.T, bin, page string, extra ...string) (dom string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=1"}, extra...)
	if len(extra) == 0 {
		args = append(args, "--dump-dom")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", page, err, tail(errb.String(), 2000))
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Failed to load resource") || strings.Contains(l, "Refused to") {
			console = append(console, l)
		}
	}
	return out.String(), console
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var (
	svgRe  = regexp.MustCompile(`(?s)<svg[^>]*\bid="([^"]+)"[^>]*>(.*?)</svg>`)
	rectRe = regexp.MustCompile(`<rect [^>]*width="([0-9.]+)"[^>]*height="([0-9.]+)"`)
	pathRe = regexp.MustCompile(`<path d="M[0-9.\- ]+ L[0-9.]`)
)

// charts returns, for each chart svg in dom, how many marks (rects with
// an area, paths with at least one segment) it draws.
func charts(dom string) map[string]int {
	out := map[string]int{}
	for _, m := range svgRe.FindAllStringSubmatch(dom, -1) {
		n := len(pathRe.FindAllString(m[2], -1))
		for _, r := range rectRe.FindAllStringSubmatch(m[2], -1) {
			if r[1] != "0" && r[2] != "0" {
				n++
			}
		}
		out[m[1]] = n
	}
	return out
}

var laneRe = regexp.MustCompile(`<text [^>]*class="lane"[^>]*>([^<]*)</text>`)

// checkLanes checks that chart id in dom labels exactly the lanes want,
// in order, and shades storm episodes.
func checkLanes(t *testing.T, dom, id string, want ...string) {
	t.Helper()
	checkLaneLabels(t, dom, id, true, want...)
}

// checkLaneLabels checks that chart id in dom labels exactly the lanes
// want, in order, and with storm, that it shades storm episodes.
func checkLaneLabels(t *testing.T, dom, id string, storm bool, want ...string) {
	t.Helper()
	for _, m := range svgRe.FindAllStringSubmatch(dom, -1) {
		if m[1] != id {
			continue
		}
		var got []string
		for _, l := range laneRe.FindAllStringSubmatch(m[2], -1) {
			got = append(got, l[1])
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s lanes %q, want %q", id, got, want)
		}
		if storm && !strings.Contains(m[2], `class="storm"`) {
			t.Errorf("%s: no storm episode shaded", id)
		}
		return
	}
	t.Errorf("no chart %s", id)
}

// checkPage loads path in Chromium and checks that the page logs nothing
// to the console, has no script or image elements, and draws every chart
// in want with marks. It returns the DOM.
func checkPage(t *testing.T, bin, path string, want ...string) string {
	t.Helper()
	dom, console := browse(t, bin, path)
	if len(console) > 0 {
		t.Errorf("%s: console messages:\n%s", filepath.Base(path), strings.Join(console, "\n"))
	}
	if !strings.Contains(dom, "</table>") {
		t.Errorf("%s: no table in the DOM (%d bytes)", filepath.Base(path), len(dom))
	}
	low := strings.ToLower(dom)
	if strings.Contains(low, "<script") || strings.Contains(low, "<img") {
		t.Errorf("%s: the DOM has a script or img element", filepath.Base(path))
	}
	got := charts(dom)
	for _, id := range want {
		if got[id] == 0 {
			t.Errorf("%s: chart %q missing or empty (charts: %v)", filepath.Base(path), id, got)
		}
	}
	return dom
}

// expectedCharts lists the charts an analysis's HTML report must draw.
func expectedCharts(t *testing.T, path string) []string {
	t.Helper()
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := analyze.Analyze(r, analyze.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"timeline"}
	if len(res.SyncAPIs) > 0 {
		want = append(want, "sync-latency")
	}
	if res.Steps.Count > 0 {
		want = append(want, "steps")
	}
	return want
}

// TestChromiumSeesConsoleErrors checks the harness: a page that logs an
// error must be caught, and an empty chart must be reported missing.
func TestChromiumSeesConsoleErrors(t *testing.T) {
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<!DOCTYPE html><html><body><table></table><svg id="empty"></svg><script>console.error("planted")</script></body></html>`), 0o644)
	dom, console := browse(t, bin, page)
	if len(console) == 0 || !strings.Contains(strings.Join(console, "\n"), "planted") {
		t.Errorf("planted console error not seen; console %q", console)
	}
	if c := charts(dom); c["empty"] != 0 {
		t.Errorf("empty svg counted %d marks", c["empty"])
	}
}

// TestHTMLReportsInChromium renders the HTML report of each shared trace,
// of a diff, a gate and a batch summary, and loads each in headless
// Chromium. UPDATE_SCREENSHOT=1 also rewrites docs/report.png from the
// demo trace's report.
func TestHTMLReportsInChromium(t *testing.T) {
	bin := chromium(t)
	traces := archTraces(t)
	dir := t.TempDir()
	names := []string{"um_pingpong_default", "um_pingpong_prefetch", "um_pingpong_explicit", "torch_mlp_managed", "torch_mlp_device"}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			trace := filepath.Join(traces, n+".sqlite")
			out := filepath.Join(dir, n+".html")
			if code, _, stderr := archRun("analyze", trace, "-o", out); code != exitOK {
				t.Fatalf("analyze: exit %d: %s", code, stderr)
			}
			checkPage(t, bin, out, expectedCharts(t, trace)...)
		})
	}
	t.Run("diff", func(t *testing.T) {
		out := filepath.Join(dir, "diff.html")
		if code, _, stderr := archRun("diff", filepath.Join(traces, "torch_mlp_managed.sqlite"), filepath.Join(traces, "torch_mlp_device.sqlite"), "-o", out); code != exitOK {
			t.Fatalf("diff: exit %d: %s", code, stderr)
		}
		checkPage(t, bin, out, "diff-change", "diff-sync", "diff-steps")
	})
	t.Run("gate", func(t *testing.T) {
		out := filepath.Join(dir, "gate.html")
		if code, _, stderr := archRun("gate", filepath.Join(traces, "um_pingpong_default.sqlite"), filepath.Join(traces, "torch_mlp_device.sqlite"), "-o", out); code != exitFail {
			t.Fatalf("gate: exit %d, want %d (the storm trace fails): %s", code, exitFail, stderr)
		}
		checkPage(t, bin, out, "gate-checks")
	})
	// Several processes or ranks: one timeline lane each.
	multi := testshared.Testdata("reproducer", "multi")
	t.Run("job", func(t *testing.T) {
		out := filepath.Join(dir, "job.html")
		if code, _, stderr := archRun("analyze", filepath.Join(multi, "multi-gpu.rank0.sqlite"), filepath.Join(multi, "multi-gpu.rank1.sqlite"), "-o", out); code != exitOK {
			t.Fatalf("analyze job: exit %d: %s", code, stderr)
		}
		checkLanes(t, checkPage(t, bin, out, "job-timeline"), "job-timeline", "rank 0 · pid 662 · GPU 0", "rank 1 · pid 665 · GPU 0")
	})
	t.Run("multi-process", func(t *testing.T) {
		// The whole file's analysis (batch's per-trace report): one lane per process.
		r, err := nsys.Open(filepath.Join(multi, "multi-process.sqlite"), nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := analyze.Analyze(r, analyze.DefaultOptions())
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := report.Generate(&b, res, "html"); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "multi-process.html")
		os.WriteFile(out, b.Bytes(), 0o644)
		checkLanes(t, checkPage(t, bin, out, "timeline"), "timeline", "rank 0 · pid 540 umtrace · GPU 0", "rank 1 · pid 541 umtrace · GPU 0")
	})
	t.Run("multi-device", func(t *testing.T) {
		// One process on a 4-GPU host (a public export): one lane per
		// GPU, named from TARGET_INFO_GPU, the GPUs without kernel or
		// memcpy rows marked idle.
		trace := testshared.Need(t, "external", "nsys", "csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite")
		out := filepath.Join(dir, "multi-device.html")
		if code, _, stderr := archRun("analyze", trace, "-o", out); code != exitOK {
			t.Fatalf("analyze: exit %d: %s", code, stderr)
		}
		db, err := sql.Open("sqlite3", "file:"+trace+"?mode=ro&immutable=1")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT id, name, id IN (SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY)
			FROM TARGET_INFO_GPU GROUP BY id ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for rows.Next() {
			var id int64
			var name string
			var active bool
			if err := rows.Scan(&id, &name, &active); err != nil {
				t.Fatal(err)
			}
			l := fmt.Sprintf("GPU %d %s", id, name)
			if !active {
				l += " · no activity"
			}
			want = append(want, l)
		}
		if rows.Close(); len(want) < 2 {
			t.Fatalf("%d GPUs listed", len(want))
		}
		checkLaneLabels(t, checkPage(t, bin, out, expectedCharts(t, trace)...), "timeline", false, want...)
	})
	t.Run("batch", func(t *testing.T) {
		in, out := t.TempDir(), filepath.Join(dir, "batch")
		archLink(t, traces, in, names...)
		if code, _, stderr := archRun("batch", in, "--out-dir", out, "-q"); code != exitOK {
			t.Fatalf("batch: exit %d: %s", code, stderr)
		}
		checkPage(t, bin, filepath.Join(out, "summary.html"), "batch-severity")
	})
	if os.Getenv("UPDATE_SCREENSHOT") != "" {
		png := filepath.Join(testshared.Root(), "docs", "report.png")
		browse(t, bin, filepath.Join(dir, "um_pingpong_default.html"), "--hide-scrollbars", "--window-size=1000,1250", "--screenshot="+png)
		t.Logf("wrote %s", png)
	}
}
