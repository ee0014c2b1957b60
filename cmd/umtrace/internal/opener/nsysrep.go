package opener

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
	"github.com/umtrace/umtrace/internal/nsysbin"
	"github.com/umtrace/umtrace/internal/outfile"
)

// ReportExts are the Nsight Systems report file extensions umtrace reads
// through `nsys export` (.qdrep is the name before nsys 2021.4).
var ReportExts = []string{".nsys-rep", ".qdrep"}

// IsReport reports whether path names an Nsight Systems report file.
func IsReport(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range ReportExts {
		if ext == e {
			return true
		}
	}
	return false
}

// SQLite returns the SQLite export to read for path: path itself, or for
// a report file the export in the cache directory, made by
// `nsys export --type sqlite` on first use and reused while the report's
// content (its SHA-256 names the export) is unchanged. Exports never go
// next to the input.
func (o Opener) SQLite(path string) (string, error) {
	if !IsReport(path) {
		return path, nil
	}
	sha, err := HashFile(path)
	if err != nil {
		return "", &exitcode.Error{Code: exitcode.BadInput, Err: err}
	}
	dir, err := o.cacheDir()
	if err != nil {
		return "", &exitcode.Error{Code: exitcode.Internal, Err: fmt.Errorf("%s: cache for nsys exports: %w", path, err)}
	}
	db := filepath.Join(dir, sha+".sqlite")
	if st, err := os.Stat(db); err == nil && st.Mode().IsRegular() {
		return db, nil
	}
	bin, err := o.nsysBinary()
	if err != nil {
		return "", &exitcode.Error{Code: exitcode.Usage, Err: fmt.Errorf("%s: --nsys: %w", path, err)}
	}
	if bin == "" {
		return "", &exitcode.Error{Code: exitcode.BadInput, Err: fmt.Errorf("%s: no nsys to read it (install Nsight Systems, --nsys PATH or UMTRACE_NSYS); "+
			"or export by hand: nsys export --type sqlite --output %s %s",
			path, strings.TrimSuffix(path, filepath.Ext(path))+".sqlite", path)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &exitcode.Error{Code: exitcode.Internal, Err: fmt.Errorf("%s: cache for nsys exports: %w", path, err)}
	}
	// Export into a private scratch directory beside the cache entry and
	// rename: concurrent runs (batch workers, shards) never read a
	// half-written export, and SIGINT/SIGTERM remove it (outfile).
	scratch, remove, err := outfile.TempDir(db)
	if err != nil {
		return "", &exitcode.Error{Code: exitcode.Internal, Err: fmt.Errorf("%s: cache for nsys exports: %w", path, err)}
	}
	defer remove()
	tmp := filepath.Join(scratch, sha+".sqlite")
	var out bytes.Buffer
	cmd := exec.Command(bin, "export", "--type", "sqlite", "--output", tmp, path)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", &exitcode.Error{Code: exitcode.BadInput, Err: fmt.Errorf("%s: %s export --type sqlite failed: %v: %s", path, bin, err, lastLine(out.String()))}
	}
	if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
		return "", &exitcode.Error{Code: exitcode.BadInput, Err: fmt.Errorf("%s: %s export --type sqlite wrote no SQLite file: %s", path, bin, lastLine(out.String()))}
	}
	if err := os.Rename(tmp, db); err != nil {
		return "", &exitcode.Error{Code: exitcode.Internal, Err: fmt.Errorf("%s: cache for nsys exports: %w", path, err)}
	}
	return db, nil
}

// cacheDir is CacheDir, $UMTRACE_CACHE_DIR or the user cache directory.
func (o Opener) cacheDir() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	if d := os.Getenv("UMTRACE_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "umtrace", "nsys-export"), nil
}

// nsysBinary is Nsys, $UMTRACE_NSYS or what nsysbin.Find finds
// (PATH, then standard install locations); "" when there is none.
func (o Opener) nsysBinary() (string, error) {
	explicit := o.Nsys
	if explicit == "" {
		explicit = os.Getenv("UMTRACE_NSYS")
	}
	p, err := nsysbin.Find(explicit)
	if err != nil {
		return "", err
	}
	if p != "" {
		if _, err := exec.LookPath(p); err != nil && !errors.Is(err, exec.ErrDot) {
			return "", err
		}
	}
	return p, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
