//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/umtrace/umtrace/internal/outfile"
)

// specialOutputs makes, in a fresh temporary directory, the outputs a
// user may name: a regular file behind a symlink, a FIFO, a character
// device (mknod 1,3 as /dev/null; root only) and a symlink to that device
// (what /dev/stdout is on a terminal).
func specialOutputs(t *testing.T) (dir, real, link, fifo, dev, devLink string) {
	t.Helper()
	dir = t.TempDir()
	real = filepath.Join(dir, "real.out")
	if err := os.WriteFile(real, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "link.out")
	os.Symlink("real.out", link)
	fifo = filepath.Join(dir, "pipe.out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dev = filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod needs root: %v", err)
	}
	devLink = filepath.Join(dir, "stdout")
	os.Symlink(dev, devLink)
	return
}

// checkSpecialOutputs fails when a special output was replaced or a
// temporary name is left in dir.
func checkSpecialOutputs(t *testing.T, dir, link, fifo, dev, devLink string) {
	t.Helper()
	for p, want := range map[string]os.FileMode{link: os.ModeSymlink, devLink: os.ModeSymlink, fifo: os.ModeNamedPipe, dev: os.ModeCharDevice} {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&want == 0 {
			t.Errorf("%s: mode %v, want %v (replaced)", filepath.Base(p), st.Mode(), want)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// drain reads the FIFO p until its writer closes it.
func drain(p string) <-chan []byte {
	c := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(p)
		c <- b
	}()
	return c
}

func received(t *testing.T, c <-chan []byte) []byte {
	t.Helper()
	select {
	case b := <-c:
		return b
	case <-time.After(2 * time.Minute):
		t.Fatal("the FIFO's reader never got EOF")
		return nil
	}
}

// TestOutputSpecialFiles: analyze -o onto a symlink replaces the link's
// target, and onto a FIFO, a character device or a link to one (as
// /dev/stdout) writes through; none of them is replaced.
func TestOutputSpecialFiles(t *testing.T) {
	trace := tracePath(t, "um_pingpong_prefetch")
	dir, real, link, fifo, dev, devLink := specialOutputs(t)
	code, want, stderr := archRun("analyze", trace, "-f", "md")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := archRun("analyze", trace, "-f", "md", "-o", link); code != exitOK {
		t.Fatalf("-o link: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(real); string(b) != want {
		t.Errorf("the link's target does not hold the report (%d bytes)", len(b))
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o640 {
		t.Errorf("the link's target lost its mode: %v", st.Mode().Perm())
	}
	got := drain(fifo)
	if code, _, stderr := archRun("analyze", trace, "-f", "md", "-o", fifo); code != exitOK {
		t.Fatalf("-o FIFO: exit %d: %s", code, stderr)
	}
	if b := received(t, got); string(b) != want {
		t.Errorf("the FIFO's reader got %d bytes, want the report's %d", len(b), len(want))
	}
	for _, p := range []string{dev, devLink} {
		if code, _, stderr := archRun("analyze", trace, "-f", "md", "-o", p); code != exitOK {
			t.Fatalf("-o %s: exit %d: %s", p, code, stderr)
		}
	}
	if code, stdout, stderr := archRun("analyze", trace, "-f", "md", "-o", "-"); code != exitOK || stdout != want {
		t.Errorf("-o -: exit %d, %d bytes on stdout: %s", code, len(stdout), stderr)
	}
	checkSpecialOutputs(t, dir, link, fifo, dev, devLink)
}

// redactInput copies a small committed trace into dir.
func redactInput(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(tracePath(t, "um_pingpong_prefetch"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.sqlite")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestRedactSpecialOutputs: redact's OUT follows the same rules as -o: a
// symlink's target is replaced, a FIFO and a character device get the
// bytes, nothing is replaced, and no scratch file is left (in OUT's
// directory or TMPDIR).
func TestRedactSpecialOutputs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, real, link, fifo, dev, devLink := specialOutputs(t)
	in := redactInput(t, t.TempDir())
	plain := filepath.Join(t.TempDir(), "plain.sqlite")
	if code, _, stderr := archRun("redact", in, plain, "-q"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile(plain)
	if !bytes.HasPrefix(want, []byte("SQLite format 3\x00")) {
		t.Fatal("redact wrote no SQLite file")
	}
	if code, _, stderr := archRun("redact", in, link, "-q"); code != exitOK {
		t.Fatalf("OUT link: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, want) {
		t.Errorf("the link's target does not hold the redacted copy (%d bytes)", len(b))
	}
	got := drain(fifo)
	if code, _, stderr := archRun("redact", in, "-o", fifo, "-q"); code != exitOK {
		t.Fatalf("OUT FIFO: exit %d: %s", code, stderr)
	}
	if b := received(t, got); !bytes.Equal(b, want) {
		t.Errorf("the FIFO's reader got %d bytes, want the copy's %d", len(b), len(want))
	}
	for _, p := range []string{dev, devLink} {
		if code, _, stderr := archRun("redact", in, p); code != exitOK {
			t.Fatalf("OUT %s: exit %d: %s", p, code, stderr)
		}
	}
	code, stdout, stderr := archRun("redact", in, "-")
	if code != exitOK || stdout != string(want) {
		t.Errorf("OUT -: exit %d, %d bytes on stdout: %s", code, len(stdout), stderr)
	}
	checkSpecialOutputs(t, dir, link, fifo, dev, devLink)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("scratch left in TMPDIR: %v", ents)
	}
}

// TestOutputIsInput: an output that is an input, or an input's -wal,
// -shm or -journal file (existing or not, by name or through a link), is
// a usage error and the input is untouched.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	in := redactInput(t, dir)
	orig, _ := os.ReadFile(in)
	os.WriteFile(in+"-shm", nil, 0o644)
	link := filepath.Join(dir, "link.sqlite")
	os.Symlink("in.sqlite", link)
	for _, args := range [][]string{
		{"redact", in, in + "-wal"},
		{"redact", in, in + "-shm"},
		{"redact", in, "-o", in + "-journal"},
		{"redact", link, in + "-wal"},
		{"redact", in, link},
		{"analyze", in, "-o", in + "-wal"},
		{"analyze", in, "-f", "md", "-o", link},
		{"gate", in, "--junit", in + "-journal"},
		{"batch", dir, "--out-dir", t.TempDir(), "-q", "-f", "md", "-o", in + "-wal"},
	} {
		code, _, stderr := archRun(args...)
		if code != exitUsage || !strings.Contains(stderr, "is an input") {
			t.Errorf("%s: exit %d, want %d: %s", strings.Join(args, " "), code, exitUsage, stderr)
		}
	}
	if b, _ := os.ReadFile(in); !bytes.Equal(b, orig) {
		t.Error("input modified")
	}
	for _, s := range []string{"-wal", "-journal"} {
		if _, err := os.Stat(in + s); err == nil {
			t.Errorf("%s created", filepath.Base(in+s))
		}
	}
}

// TestRedactSignal: SIGTERM (and SIGINT) to a running umtrace redact
// leaves no scratch file, redacted or not, and exits 143 (130). The
// output is a FIFO nobody reads, so the child is still running, its
// redacted copy finished in its scratch directory, when the signal comes;
// a second round signals it as soon as the scratch directory appears,
// while it copies and redacts.
func TestRedactSignal(t *testing.T) {
	if args := os.Getenv("UMTRACE_TEST_CHILD_ARGS"); args != "" {
		os.Exit(run(os.Stdout, os.Stderr, strings.Split(args, "\x1f")))
	}
	in := redactInput(t, t.TempDir())
	child := func(tmp string, args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedactSignal$")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "UMTRACE_TEST_CHILD_ARGS="+strings.Join(args, "\x1f"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// waitScratch polls dir until a scratch directory holds want entries.
	waitScratch := func(dir string, want int) bool {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), outfile.TempPrefix) {
					in, _ := os.ReadDir(filepath.Join(dir, e.Name()))
					if len(in) >= want {
						return true
					}
				}
			}
		}
		return false
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		tmp := t.TempDir()
		fifo := filepath.Join(t.TempDir(), "out.sqlite")
		syscall.Mkfifo(fifo, 0o600)
		cmd := child(tmp, "redact", in, fifo, "-q")
		if !waitScratch(tmp, 1) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("no scratch directory appeared in TMPDIR")
		}
		// The copy is finished when only it is left (no -journal beside it).
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			m, _ := filepath.Glob(filepath.Join(tmp, outfile.TempPrefix+"*", "*"))
			if len(m) == 1 && filepath.Base(m[0]) == "redacted.sqlite" {
				break
			}
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		if code, want := cmd.ProcessState.ExitCode(), 128+int(sig); code != want {
			t.Errorf("%v while placing: exit %d, want %d: %s", sig, code, want, cmd.Stderr)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("%v while placing: left in TMPDIR: %v", sig, ents)
		}
	}
	// SIGKILL cannot be caught: the scratch directory stays (mode 0700,
	// a hidden name), and the next run that writes there removes it.
	tmp := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "out.sqlite")
	syscall.Mkfifo(fifo, 0o600)
	cmd := child(tmp, "redact", in, fifo, "-q")
	if !waitScratch(tmp, 1) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("no scratch directory appeared in TMPDIR")
	}
	cmd.Process.Kill()
	cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(tmp, outfile.TempPrefix+"*"))
	if len(left) != 1 {
		t.Fatalf("after SIGKILL: %v", left)
	}
	if st, _ := os.Stat(left[0]); st.Mode().Perm() != 0o700 {
		t.Errorf("scratch directory mode %v, want 0700", st.Mode().Perm())
	}
	t.Setenv("TMPDIR", tmp)
	got := drain(fifo)
	if code, _, stderr := archRun("redact", in, fifo, "-q"); code != exitOK {
		t.Fatalf("redact after SIGKILL: exit %d: %s", code, stderr)
	}
	received(t, got)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the next run left the killed run's scratch: %v", ents)
	}

	dir := t.TempDir()
	cmd = child(t.TempDir(), "redact", in, filepath.Join(dir, "out.sqlite"), "-q")
	waitScratch(dir, 0)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	ents, _ := os.ReadDir(dir)
	switch {
	case code == 143 && len(ents) == 0:
	case code == 0 && len(ents) == 1 && ents[0].Name() == "out.sqlite":
		t.Log("redact finished before the signal")
	default:
		t.Errorf("SIGTERM while redacting: exit %d, left %v", code, ents)
	}
}

// TestSynthSpecialOutputs: synth's OUT follows the output rules: a
// symlink's target is replaced (the link stays), a FIFO gets the trace's
// bytes, an existing file needs --force, and no scratch file is left.
func TestSynthSpecialOutputs(t *testing.T) {
	dir, real, link, fifo, dev, devLink := specialOutputs(t)
	plain := filepath.Join(t.TempDir(), "plain.sqlite")
	args := []string{"--steps", "30", "--episodes", "1", "--decoys", "0", "-q"}
	if code, _, stderr := archRun(append([]string{"synth", plain}, args...)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile(plain)
	if code, _, stderr := archRun(append([]string{"synth", plain}, args...)...); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("existing OUT without --force: exit %d: %s", code, stderr)
	}
	if code, _, stderr := archRun(append([]string{"synth", link, "--force"}, args...)...); code != exitOK {
		t.Fatalf("OUT link: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, want) {
		t.Errorf("the link's target does not hold the trace (%d bytes, want %d)", len(b), len(want))
	}
	got := drain(fifo)
	if code, _, stderr := archRun(append([]string{"synth", fifo}, args...)...); code != exitOK {
		t.Fatalf("OUT FIFO: exit %d: %s", code, stderr)
	}
	if b := received(t, got); !bytes.Equal(b, want) {
		t.Errorf("the FIFO's reader got %d bytes, want %d", len(b), len(want))
	}
	os.Remove(link + ".truth.json")
	os.Remove(fifo + ".truth.json")
	os.Remove(real + ".truth.json")
	checkSpecialOutputs(t, dir, link, fifo, dev, devLink)
}
