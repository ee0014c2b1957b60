package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMain removes the test binary built without the race detector for
// the ulimit tests (plainExe).
func TestMain(m *testing.M) {
	code := m.Run()
	if plainDir != "" {
		os.RemoveAll(plainDir)
	}
	os.Exit(code)
}

var (
	plainOnce sync.Once
	plainDir  string
	plainPath string
	plainErr  error
)

// plainExe is a test binary of this package built without the race
// detector, whose shadow memory (terabytes of address space) no ulimit -v
// fits: under -race the ulimit tests run umtrace from it, so make test
// (go test -race) runs them too. Without -race it is this test binary.
func plainExe(t *testing.T) string {
	t.Helper()
	if !underRace {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		return exe
	}
	plainOnce.Do(func() {
		if plainDir, plainErr = os.MkdirTemp("", "umtrace-plain-"); plainErr != nil {
			return
		}
		plainPath = filepath.Join(plainDir, "umtrace.test")
		out, err := exec.Command("go", "test", "-c", "-o", plainPath, ".").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("go test -c without -race: %v: %s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainPath
}

// TestHelperMain is umtrace's main for the tests that run it as a process
// (UMTRACE_TEST_MAIN=1, arguments after "--"): supervised, as main runs
// it, with the test binary as the child. UMTRACE_TEST_CHILD_ULIMIT puts a
// limit (ulimit's flags) on the child alone.
func TestHelperMain(t *testing.T) {
	if os.Getenv("UMTRACE_TEST_MAIN") != "1" {
		t.Skip("umtrace's main, for the tests that run it as a process")
	}
	args := os.Args[slices.Index(os.Args, "--")+1:]
	child := func(exe string, a []string) (string, []string) {
		a = append([]string{"-test.run=^TestHelperMain$", "--"}, a...)
		if l := os.Getenv("UMTRACE_TEST_CHILD_ULIMIT"); l != "" {
			return "/bin/sh", append([]string{"-c", "ulimit " + l + ` && exec "$0" "$@"`, exe}, a...)
		}
		return exe, a
	}
	if code, ok := supervise(os.Stderr, args, child); ok {
		os.Exit(code)
	}
	if v := os.Getenv("UMTRACE_TEST_PANIC"); v != "" && os.Getenv(supervisedEnv) != "" {
		// A bug, planted in the supervised child, on a goroutine of its
		// own as most of the analysis's run.
		go func() { panic("planted for the test: " + v) }()
		select {}
	}
	os.Exit(run(os.Stdout, os.Stderr, args))
}

// umtraceProc runs umtrace as a process (TestHelperMain) under `ulimit
// ulimit` when ulimit is set, with env added: stdout, stderr, exit code.
func umtraceProc(t *testing.T, ulimit string, env []string, args ...string) (string, string, int) {
	t.Helper()
	exe := plainExe(t)
	argv := append([]string{exe, "-test.run=^TestHelperMain$", "--"}, args...)
	var cmd *exec.Cmd
	if ulimit != "" {
		cmd = exec.Command("/bin/sh", append([]string{"-c", "ulimit " + ulimit + ` && exec "$0" "$@"`}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = append(append(os.Environ(), "UMTRACE_TEST_MAIN=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestReservationFitsLimits: what the huge-page reservation and the GC's
// soft limit plan with is bounded by RLIMIT_AS and RLIMIT_DATA (measured
// from the process's use) and the cgroup's limit.
func TestReservationFitsLimits(t *testing.T) {
	const gib = 1 << 30
	free := memLimits{}
	if got := thpBytes(4*gib, free); got != min(gcBaseBytes+2*gib, machineMemory()/4) {
		t.Errorf("no limits: reservation %d", got)
	}
	// ulimit -v 2000000 with 1.1 GiB mapped: a quarter of the 0.8 GiB left.
	as := memLimits{as: 2000000 << 10, vmSize: 1100 << 20}
	room := int64(2000000<<10) - 1100<<20
	if got := thpBytes(4*gib, as); got > room/4 || got < room/4-1 {
		t.Errorf("ulimit -v: reservation %d, want a quarter of %d", got, room)
	}
	if got := gcCeiling(as); got > room*3/4+1 || got < room*3/4-1 {
		t.Errorf("ulimit -v: GC ceiling %d, want three quarters of %d", got, room)
	}
	// Little room: no reservation at all.
	if got := thpBytes(4*gib, memLimits{as: 1200 << 20, vmSize: 1100 << 20}); got != 0 {
		t.Errorf("100 MiB of room: reservation %d, want none", got)
	}
	// RLIMIT_DATA counts from VmData; the smaller room wins.
	data := memLimits{as: 8 * gib, vmSize: gib, data: 600 << 20, vmData: 100 << 20}
	if got := thpBytes(4*gib, data); got != 125<<20 {
		t.Errorf("ulimit -d: reservation %d, want %d", got, 125<<20)
	}
	// A cgroup limit bounds the GC ceiling, not the reservation (address
	// space, never touched).
	cg := memLimits{cgroup: 512 << 20}
	if got := gcCeiling(cg); got != 384<<20 {
		t.Errorf("cgroup 512 MiB: GC ceiling %d, want 384 MiB", got)
	}
	if got := thpBytes(gib, cg); got == 0 {
		t.Error("cgroup limit: no reservation")
	}
}

// TestCgroupMemoryMax reads the limit files of a cgroup tree laid out
// like the kernel's (v2 memory.max, v1 memory.limit_in_bytes), for the
// hierarchies /proc/self/cgroup names.
func TestCgroupMemoryMax(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	v1, v2 := false, false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 {
			v2 = v2 || (f[0] == "0" && f[1] == "")
			v1 = v1 || strings.Contains(","+f[1]+",", ",memory,")
		}
	}
	root := t.TempDir()
	write := func(p, v string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory.max", "max")
	write("memory/memory.limit_in_bytes", "9223372036854771712")
	if got := cgroupMemoryMax(root); got != 0 {
		t.Errorf("unlimited: %d", got)
	}
	write("memory.max", "1073741824")
	write("memory/memory.limit_in_bytes", "536870912")
	want := int64(0)
	if v2 {
		want = 1 << 30
	}
	if v1 {
		want = 512 << 20
	}
	if got := cgroupMemoryMax(root); got != want {
		t.Errorf("limits 1 GiB (v2) and 512 MiB (v1), hierarchies v1 %v v2 %v: got %d, want %d", v1, v2, got, want)
	}
}

// TestAnalyzeUnderUlimit: under `ulimit -v 2000000` (as the issue ran it)
// a trace whose file is 4 GiB analyzes and gives the committed report.
// The file is um_pingpong_default.sqlite extended (sparse) to 4 GiB: SQLite
// reads the pages its header counts, and the reservation, which follows
// the file's size (64 MiB + half of it: 2.06 GiB before), did not fit the
// limit: the old code died at once with "fatal error: out of memory".
func TestAnalyzeUnderUlimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "um_pingpong_default.sqlite")
	copyForLimits(t, tracePath(t, "um_pingpong_default"), big)
	if err := os.Truncate(big, 4<<30); err != nil {
		t.Skipf("no sparse 4 GiB file here: %v", err)
	}
	out, errs, code := umtraceProc(t, "-v 2000000", nil, "analyze", big, "-f", "json")
	if code != exitOK {
		t.Fatalf("under ulimit -v 2000000: exit %d: %s", code, errs)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "analyze", "um_pingpong_default.json"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("under ulimit -v 2000000 the report differs from testdata/analyze/um_pingpong_default.json")
	}
}

// TestOutOfMemoryOneLine: when the analysis runs out of memory (the child
// under a ulimit -v too small for it, the supervising parent not), the
// runtime's fatal error and its dump become one line and exit 4. A limit
// the analysis fits gives the report; the runtime dies at different
// points under different limits (reserving its page summaries, its heap,
// a cgo thread's stack), so several are tried.
func TestOutOfMemoryOneLine(t *testing.T) {
	trace := tracePath(t, "um_pingpong_default")
	// The Go runtime's out of memory (the parent's line), or SQLite's own
	// (an error of the read, exit 4 too).
	line := regexp.MustCompile(`^umtrace analyze: (out of memory reading \S*um_pingpong_default\.sqlite \(limit: [^)]+\)|.*um_pingpong_default\.sqlite: .*: out of memory \(SQLite\))\n$`)
	ooms := 0
	for _, kb := range []string{"300000", "700000", "800000", "900000"} {
		out, errs, code := umtraceProc(t, "", []string{"UMTRACE_TEST_CHILD_ULIMIT=-v " + kb}, "analyze", trace, "-f", "json")
		switch code {
		case exitOK:
			if !strings.Contains(out, `"verdict"`) {
				t.Errorf("ulimit -v %s: exit 0 without a report", kb)
			}
		case exitInternal:
			ooms++
			if !line.MatchString(errs) || out != "" {
				t.Errorf("ulimit -v %s: stderr %q (%d bytes of stdout), want one line matching %s", kb, errs, len(out), line)
			}
		default:
			t.Errorf("ulimit -v %s: exit %d, want 4: %.300s", kb, code, errs)
		}
	}
	if ooms == 0 {
		t.Error("no limit ran out of memory")
	}
	// Not supervised, the same limit gives the runtime's dump and exit 2:
	// what the parent is for.
	_, errs, code := umtraceProc(t, "-v 300000", []string{"UMTRACE_SUPERVISE=0"}, "analyze", trace, "-f", "json")
	if code != 2 || !strings.Contains(errs, "fatal error") {
		t.Errorf("unsupervised under ulimit -v 300000: exit %d, %.200q", code, errs)
	}
}

// TestStderrFilter: the parent passes stderr through as it comes (partial
// lines included), holds what may be a runtime message until its line
// ends, and drops everything from an out-of-memory message on.
func TestStderrFilter(t *testing.T) {
	var b bytes.Buffer
	f := &stderrFilter{w: &b}
	io.WriteString(f, "umtrace batch: a.sqlite: not a trace\n\r[##..] 1/2 a")
	if b.String() != "umtrace batch: a.sqlite: not a trace\n\r[##..] 1/2 a" {
		t.Errorf("not passed at once: %q", b.String())
	}
	io.WriteString(f, ".sqlite\nrunt")
	io.WriteString(f, "ime: program exceeds 10000-thread limit\nfatal error: ")
	if want := "umtrace batch: a.sqlite: not a trace\n\r[##..] 1/2 a.sqlite\nruntime: program exceeds 10000-thread limit\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	io.WriteString(f, "out of memory\n\ngoroutine 1 [running]:\nmain.main()\n")
	f.flush()
	if f.oom != true || strings.Contains(b.String(), "goroutine") || strings.Contains(b.String(), "fatal") {
		t.Errorf("out of memory: oom %v, passed %q", f.oom, b.String())
	}
}

func copyForLimits(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
