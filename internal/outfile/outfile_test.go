//go:build linux

package outfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noTemps fails when dir holds a temporary name of this package.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}

func TestWriteRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := Write(p, nil, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := defaultPerm(); st.Mode().Perm() != want {
		t.Errorf("new file mode %v, want %v", st.Mode().Perm(), want)
	}
	// A replaced file keeps its mode.
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, nil, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two\n" {
		t.Errorf("content %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("replaced file mode %v, want 0640", st.Mode().Perm())
	}
	// A failing generator leaves the old file and no temporary.
	err = WriteFunc(p, nil, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("boom")
	})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v does not name %s", err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "two\n" {
		t.Errorf("failed write changed the file: %q", b)
	}
	noTemps(t, dir)
	if err := Write(dir, nil, nil); !errors.Is(err, ErrIsDir) {
		t.Errorf("directory: %v", err)
	}
}

// TestWriteSymlink: a link's target is replaced; the link stays a link,
// also when it dangles.
func TestWriteSymlink(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	real := filepath.Join(sub, "real.md")
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink("sub/real.md", link); err != nil {
		t.Fatal(err)
	}
	link2 := filepath.Join(dir, "link2.md") // a link to the link
	os.Symlink(link, link2)
	dangling := filepath.Join(dir, "dangling.md")
	os.Symlink(filepath.Join(sub, "new.md"), dangling)
	for _, l := range []string{link, link2} {
		if err := Write(l, nil, []byte("via "+filepath.Base(l))); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(real); string(b) != "via "+filepath.Base(l) {
			t.Errorf("%s: target holds %q", l, b)
		}
	}
	if err := Write(dangling, nil, []byte("new")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, link2, dangling} {
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink", l)
		}
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o600 {
		t.Errorf("target mode %v, want its own 0600", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "new.md")); string(b) != "new" {
		t.Errorf("dangling link's target holds %q", b)
	}
	noTemps(t, dir)
	noTemps(t, sub)
}

// mknodNull makes a character device with /dev/null's numbers (1,3) in
// dir (root only).
func mknodNull(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod needs root: %v", err)
	}
	return p
}

// TestWriteDevice: a character device, and a symlink to one (as
// /dev/stdout is), are written through and stay what they are.
func TestWriteDevice(t *testing.T) {
	dir := t.TempDir()
	dev := mknodNull(t, dir)
	link := filepath.Join(dir, "stdout")
	os.Symlink(dev, link)
	for _, p := range []string{dev, link} {
		if err := Write(p, nil, []byte("discarded")); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if st, err := os.Stat(dev); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("%s is no longer a character device: %v", dev, st.Mode())
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link to the device was replaced")
	}
	noTemps(t, dir)
}

// readFIFO starts a reader of the FIFO p and returns what it read.
func readFIFO(t *testing.T, p string) <-chan string {
	got := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(p)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	}()
	return got
}

func waitFor(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(time.Minute):
		t.Fatal("FIFO reader did not finish")
		return ""
	}
}

func TestWriteFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pipe.md")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	got := readFIFO(t, p)
	if err := Write(p, nil, []byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := waitFor(t, got); s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if st, err := os.Stat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	noTemps(t, dir)
}

func TestWriteStdout(t *testing.T) {
	var b bytes.Buffer
	if err := Write(Stdout, &b, []byte("x")); err != nil || b.String() != "x" {
		t.Errorf("stdout: %q %v", b.String(), err)
	}
}

// TestPlace: a finished file made in a TempDir reaches every kind of
// output; the scratch directory is private.
func TestPlace(t *testing.T) {
	dir := t.TempDir()
	dev := mknodNull(t, dir)
	fifo := filepath.Join(dir, "pipe")
	syscall.Mkfifo(fifo, 0o600)
	real := filepath.Join(dir, "real.sqlite")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.sqlite")
	os.Symlink("real.sqlite", link)
	devLink := filepath.Join(dir, "stdout")
	os.Symlink(dev, devLink)
	var std bytes.Buffer
	for _, out := range []string{filepath.Join(dir, "new.sqlite"), link, dev, devLink, fifo, Stdout} {
		tmp, remove, err := TempDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(tmp); st.Mode().Perm() != 0o700 || !strings.HasPrefix(filepath.Base(tmp), TempPrefix) {
			t.Errorf("%s: scratch %s mode %v", out, tmp, st.Mode().Perm())
		}
		src := filepath.Join(tmp, "x.sqlite")
		os.WriteFile(src, []byte("content of "+filepath.Base(out)), 0o600)
		var got <-chan string
		if out == fifo {
			got = readFIFO(t, fifo)
		}
		if err := Place(src, out, &std); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		remove()
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("%s: scratch directory left", out)
		}
		if got != nil {
			if s := waitFor(t, got); s != "content of pipe" {
				t.Errorf("FIFO reader got %q", s)
			}
		}
	}
	if b, _ := os.ReadFile(real); string(b) != "content of link.sqlite" {
		t.Errorf("link target holds %q", b)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("link replaced")
	}
	if st, _ := os.Stat(filepath.Join(dir, "new.sqlite")); st.Mode().Perm() != defaultPerm() {
		t.Errorf("new file mode %v", st.Mode().Perm())
	}
	if std.String() != "content of -" {
		t.Errorf("stdout got %q", std.String())
	}
	if st, _ := os.Stat(dev); st.Mode()&os.ModeCharDevice == 0 {
		t.Error("device replaced")
	}
	if st, _ := os.Stat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("FIFO replaced")
	}
	noTemps(t, dir)
}

func TestCheckInputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "run.sqlite")
	os.WriteFile(in, []byte("x"), 0o644)
	os.WriteFile(in+"-shm", []byte("x"), 0o644)
	hard := filepath.Join(dir, "hard.sqlite")
	os.Link(in, hard)
	link := filepath.Join(dir, "link.sqlite")
	os.Symlink("run.sqlite", link)
	walLink := filepath.Join(dir, "wal-link")
	os.Symlink("run.sqlite-wal", walLink)
	for _, out := range []string{in, hard, link, in + "-wal", in + "-shm", in + "-journal", walLink, "./" + filepath.Base(in) + "-wal"} {
		if strings.HasPrefix(out, "./") {
			t.Chdir(dir)
		}
		if err := CheckInputs(out, "other.sqlite", in); !errors.Is(err, ErrIsInput) {
			t.Errorf("output %s: %v, want ErrIsInput", out, err)
		}
	}
	// An input named through a link: its side files are the link's
	// target's (SQLite resolves the link) and the link's name's.
	for _, out := range []string{in + "-wal", link + "-wal"} {
		if err := CheckInputs(out, link); !errors.Is(err, ErrIsInput) {
			t.Errorf("output %s, input %s: %v, want ErrIsInput", out, link, err)
		}
	}
	for _, out := range []string{filepath.Join(dir, "out.sqlite"), in + "-walrus", link + "-wal", Stdout} {
		if err := CheckInputs(out, in); err != nil {
			t.Errorf("output %s: %v", out, err)
		}
	}
}

// TestCleanStale: temporary names of a dead process are removed, a live
// process's and other names are kept.
func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := filepath.Join(dir, fmt.Sprintf("%s%d-abc", TempPrefix, cmd.Process.Pid))
	os.Mkdir(dead, 0o700)
	os.WriteFile(filepath.Join(dead, "x"), nil, 0o600)
	deadFile := filepath.Join(dir, fmt.Sprintf("%s%d-def", TempPrefix, cmd.Process.Pid))
	os.WriteFile(deadFile, nil, 0o600)
	liveName := filepath.Join(dir, fmt.Sprintf("%s%d-abc", TempPrefix, os.Getppid()))
	os.WriteFile(liveName, nil, 0o600)
	other := filepath.Join(dir, ".run.sqlite.tmp")
	os.WriteFile(other, nil, 0o600)
	if err := Write(filepath.Join(dir, "out"), nil, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead: false, deadFile: false, liveName: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestSignalRemovesTemps: SIGTERM and SIGINT while a temporary file and
// directory exist remove them and exit 143 and 130.
func TestSignalRemovesTemps(t *testing.T) {
	if dir := os.Getenv("OUTFILE_TEST_CHILD"); dir != "" {
		f, err := CreateTemp(dir)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		f.WriteString("unfinished")
		d, _, err := TempDir(filepath.Join(dir, "out.sqlite"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.WriteFile(filepath.Join(d, "secret.sqlite"), []byte("secret"), 0o600)
		fmt.Println("ready")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSignalRemovesTemps$")
		cmd.Env = append(os.Environ(), "OUTFILE_TEST_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q", line)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 2 {
			t.Errorf("child made %d temporaries, want 2", len(ents))
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		want := 128 + int(sig)
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("%v: exit %d, want %d", sig, code, want)
		}
		noTemps(t, dir)
	}
}

// TestWriteProcLink: a link through /proc/self/fd (what /dev/stdout is)
// to a regular file is written through, appended to, never replaced: the
// shell's redirection keeps its file and the link stays a link.
func TestWriteProcLink(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "redirected.txt"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("before\n")
	link := filepath.Join(dir, "stdout")
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, nil, []byte("report\n")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "before\nreport\n" {
		t.Errorf("the redirected file holds %q", b)
	}
	noTemps(t, dir)
}
