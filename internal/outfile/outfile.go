// Package outfile is umtrace's one place for writing output files: every
// command's -o, the files batch and export write under --out-dir, and
// redact's SQLite copy go through it.
//
// The rules (README.md, "Output files"):
//
//   - A regular file (or a name that does not exist yet) is written
//     atomically: to a temporary file in the target's directory (mode 0600,
//     named TempPrefix+PID+"-"+random), flushed with fsync, given the usual
//     mode (the mode of the file it replaces, else 0644 less the umask)
//     and renamed onto the target. Readers never see a partial file.
//   - A symbolic link is followed: its final target is replaced, never the
//     link itself.
//   - A character device, FIFO or other non-regular file, a name that
//     reaches one through /proc or /dev/fd (/dev/stdout), and "-" (stdout)
//     are written straight through: opened for writing, never created,
//     renamed onto or removed.
//   - CheckInputs refuses an output that is one of the inputs or an input's
//     -wal, -shm or -journal file (same device and inode, or, for a side
//     file that does not exist yet, the same path).
//   - Temporary files and directories are registered while they exist: on
//     SIGINT or SIGTERM they are removed and the process exits 130 or 143.
//     A run that finds temporary names of a process that no longer exists
//     (killed with SIGKILL) in a directory it writes to removes them.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// TempPrefix starts the name of every temporary file or directory this
// package makes; the PID of the process that made it follows.
const TempPrefix = ".umtrace-tmp-"

// Stdout is the output name that means the standard output.
const Stdout = "-"

// ErrIsInput is returned (wrapped) by CheckInputs.
var ErrIsInput = errors.New("output is an input")

// ErrIsDir is returned (wrapped) when an output names a directory.
var ErrIsDir = errors.New("output is a directory")

// kind is how an output is written.
type kind int

const (
	replace kind = iota // regular file or new name: temp + rename
	through             // device, FIFO, /proc magic link: opened and written
	stdout              // "-"
)

// target is a resolved output name.
type target struct {
	name string      // as given
	path string      // the file replaced (replace) or opened (through)
	kind kind        //
	perm os.FileMode // final mode of a replaced file
	app  bool        // through a /proc link to a regular file: append
}

// maxLinks bounds symlink chains (Linux's own limit is 40).
const maxLinks = 40

// resolve classifies name. A symlink chain is followed hop by hop so a
// dangling link names the file to create; a chain that passes through
// /proc or /dev/fd (/dev/stdout) is written through its own name, since
// those links' targets are not paths to replace.
func resolve(name string) (target, error) {
	t := target{name: name, path: name}
	if name == Stdout {
		t.kind = stdout
		return t, nil
	}
	if st, err := os.Stat(name); err == nil {
		switch {
		case st.IsDir():
			return t, fmt.Errorf("%s: %w", name, ErrIsDir)
		case !st.Mode().IsRegular():
			t.kind = through
			return t, nil
		}
	}
	p := name
	for i := 0; ; i++ {
		if magic(p) {
			t.kind, t.app = through, true
			return t, nil
		}
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return t, err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			break
		}
		if i == maxLinks {
			return t, fmt.Errorf("%s: too many levels of symbolic links", name)
		}
		link, err := os.Readlink(p)
		if err != nil {
			return t, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	t.path = p
	t.perm = defaultPerm()
	if st, err := os.Stat(p); err == nil {
		if st.IsDir() {
			return t, fmt.Errorf("%s: %w", name, ErrIsDir)
		}
		t.perm = st.Mode().Perm()
	}
	return t, nil
}

// magic reports whether p is under /proc or /dev/fd, whose links
// (/proc/self/fd/1, pipe:[123]) are not paths to replace.
func magic(p string) bool {
	p = filepath.Clean(p)
	return p == "/proc" || strings.HasPrefix(p, "/proc/") || p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/")
}

// Through reports whether name is written through rather than replaced:
// "-", a device, FIFO or other non-regular file, or a name that reaches
// one through /proc or /dev/fd.
func Through(name string) bool {
	t, err := resolve(name)
	return err == nil && t.kind != replace
}

// Check classifies name the way Write would and returns the error Write
// would give before writing anything (a directory, a symlink loop).
func Check(name string) error {
	_, err := resolve(name)
	return err
}

// Write puts data in the file name (see the package comment); "-" is
// std (os.Stdout when nil).
func Write(name string, std io.Writer, data []byte) error {
	return WriteFunc(name, std, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc is Write for output that gen writes in pieces: it is
// buffered, and a regular target is replaced only when gen and every
// write succeeded. Errors name the file.
func WriteFunc(name string, std io.Writer, gen func(io.Writer) error) error {
	t, err := resolve(name)
	if err != nil {
		return fmt.Errorf("write %w", err)
	}
	put := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		if err := gen(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if std == nil {
		std = os.Stdout
	}
	switch t.kind {
	case stdout:
		if err := put(std); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return nil
	case through:
		if err := writeThrough(t, put); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	f, err := CreateTemp(filepath.Dir(t.path))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	err = put(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(t.perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), t.path)
	}
	if err != nil {
		os.Remove(f.Name())
		Forget(f.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	Forget(f.Name())
	syncDir(filepath.Dir(t.path))
	return nil
}

// writeThrough opens a non-regular target for writing (never creating,
// truncating or renaming it) and lets put write to it.
func writeThrough(t target, put func(io.Writer) error) error {
	flags := os.O_WRONLY
	if t.app {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(t.path, flags, 0)
	if err != nil {
		return err
	}
	err = put(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable; errors are ignored (some file
// systems cannot fsync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// CreateTemp creates a new temporary file (mode 0600) in dir, named
// TempPrefix+PID+"-"+random, and registers it for removal on SIGINT and
// SIGTERM: call Forget once it is renamed or removed. Stale temporary
// names of dead processes in dir are removed first (once per directory
// and process).
func CreateTemp(dir string) (*os.File, error) {
	CleanStale(dir)
	for i := 0; ; i++ {
		name := tempName(dir)
		hold()
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			live[name] = true
		}
		release()
		if os.IsExist(err) && i < 100 {
			continue
		}
		return f, err
	}
}

// Reserve creates an empty file in dir named by pattern (os.CreateTemp)
// for a writer that opens it by name (SQLite), and returns its name and a
// discard func that removes it unless *kept is true by then: defer
// discard(&ok), set ok once the file is renamed into place.
func Reserve(dir, pattern string) (name string, discard func(kept *bool), err error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", nil, err
	}
	name = f.Name()
	f.Close()
	return name, func(kept *bool) {
		if !*kept {
			os.Remove(name)
		}
	}, nil
}

// TempDir creates a private directory (mode 0700) for scratch files of
// the output name: in the directory of the file name would replace, or,
// for a device, FIFO or stdout, in os.TempDir(). It is registered for
// removal on SIGINT and SIGTERM; remove removes it and everything in it.
// Put a finished file in place with Place.
func TempDir(name string) (dir string, remove func(), err error) {
	t, err := resolve(name)
	if err != nil {
		return "", nil, err
	}
	parent := os.TempDir()
	if t.kind == replace {
		parent = filepath.Dir(t.path)
	}
	CleanStale(parent)
	for i := 0; ; i++ {
		dir = tempName(parent)
		hold()
		err = os.Mkdir(dir, 0o700)
		if err == nil {
			live[dir] = true
		}
		release()
		if os.IsExist(err) && i < 100 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir); Forget(dir) }, nil
	}
}

// Place moves the finished file src (made in a TempDir of name) to the
// output name: onto a regular file or new name by rename (a symlink's
// target is replaced), with the usual mode; into a device or FIFO by
// copying its bytes; to std for "-". src is gone afterwards unless an
// error is returned.
func Place(src, name string, std io.Writer) error {
	t, err := resolve(name)
	if err != nil {
		return fmt.Errorf("write %w", err)
	}
	copyFrom := func(w io.Writer) error {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	if std == nil {
		std = os.Stdout
	}
	switch t.kind {
	case stdout:
		if err := copyFrom(std); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return os.Remove(src)
	case through:
		if err := writeThrough(t, copyFrom); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return os.Remove(src)
	}
	f, err := os.OpenFile(src, os.O_RDWR, 0)
	if err == nil {
		err = f.Sync()
		if err == nil {
			err = f.Chmod(t.perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(src, t.path)
		if errors.Is(err, syscall.EXDEV) {
			// Another file system: copy through a temporary file of the
			// target's directory instead.
			if err = WriteFunc(t.path, nil, copyFrom); err == nil {
				err = os.Remove(src)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	syncDir(filepath.Dir(t.path))
	return nil
}

// CheckInputs returns an error wrapping ErrIsInput when the output name
// is one of inputs, or one of their -wal, -shm or -journal side files
// (SQLite deletes or rewrites those): the same device and inode as an
// existing one, or the same resolved path as one that does not exist yet.
// "-" and non-existent inputs never clash.
func CheckInputs(name string, inputs ...string) error {
	if name == Stdout || name == "" {
		return nil
	}
	ost, oerr := os.Stat(name)
	opath := canonical(name)
	for _, in := range inputs {
		if in == Stdout {
			continue
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if oerr == nil && os.SameFile(ist, ost) {
			return fmt.Errorf("%s: %w (%s)", name, ErrIsInput, in)
		}
		ipath := canonical(in)
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			side := in + suffix
			if sst, err := os.Stat(side); err == nil && oerr == nil && os.SameFile(sst, ost) {
				return fmt.Errorf("%s: %w's %s file (%s)", name, ErrIsInput, suffix, in)
			}
			if opath != "" && (opath == ipath+suffix || opath == canonical(side)) {
				return fmt.Errorf("%s: %w's %s file (%s)", name, ErrIsInput, suffix, in)
			}
		}
	}
	return nil
}

// canonical is the absolute path of the file name refers to, symlinks
// resolved as far as they exist ("" when it cannot be worked out).
func canonical(name string) string {
	t, err := resolve(name)
	p := t.path
	if err != nil || t.kind == stdout {
		return ""
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(filepath.Join(dir, filepath.Base(p)))
	if err != nil {
		return ""
	}
	return abs
}

// Registry of live temporary names, removed by the signal handler.
var (
	mu        sync.Mutex
	live      = map[string]bool{}
	installed sync.Once
	cleanedMu sync.Mutex
	cleaned   = map[string]bool{}
)

// hold locks the registry (installing the signal handler first).
func hold() {
	installed.Do(installHandler)
	mu.Lock()
}

func release() { mu.Unlock() }

// Forget unregisters a temporary name that was renamed or removed.
func Forget(name string) {
	mu.Lock()
	delete(live, name)
	mu.Unlock()
}

// removeLive removes every registered temporary name and keeps the
// registry locked, so none is made after it (the process exits next).
func removeLive() {
	mu.Lock()
	for p := range live {
		// A scratch directory is renamed first: a goroutine still writing
		// into it by name (SQLite opening its journal) then fails instead
		// of recreating a file in it while it is being removed. The new
		// name keeps the prefix, so a later run removes any leftover.
		gone := p + "-x"
		if os.Rename(p, gone) != nil {
			gone = p
		}
		for range 3 {
			if os.RemoveAll(gone) == nil {
				break
			}
		}
	}
}

// tempName returns a fresh temporary name in dir.
func tempName(dir string) string {
	return filepath.Join(dir, TempPrefix+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(rand.Uint64()>>16, 36))
}

// CleanStale removes temporary names (TempPrefix) in dir left by
// processes that no longer exist, once per directory and process. Names
// of live processes (another umtrace writing there now) are kept.
func CleanStale(dir string) {
	key := filepath.Clean(dir)
	cleanedMu.Lock()
	done := cleaned[key]
	cleaned[key] = true
	cleanedMu.Unlock()
	if done {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), TempPrefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == self || alive(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
