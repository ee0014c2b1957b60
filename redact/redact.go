// Package redact makes a shareable copy of an Nsight Systems SQLite export.
//
// Policy:
//   - Environments (StringIds NUL-separated blocks, META_DATA_CAPTURE
//     PROCESS_n:ENVIRONMENT_VARIABLE and PROCESS_n:ENV_* rows,
//     TARGET_INFO_SYSTEM_ENV DeviceEnvironment/EnvVars, ProcessEnv-like
//     tables) lose every variable but the ones in KeptEnv (ranks, world
//     sizes, visible devices), whose values must look like numbers or ids.
//   - Argv (PROCESS_n:ARGUMENT_k, NUL-separated argument lists in
//     StringIds): values after secret flags, secret NAME=VALUE pairs and
//     token-like arguments become REDACTED.
//   - Identities found in the file (USER, LOGNAME, SLURM_JOB_USER, HOME,
//     HOSTNAME, SSH_CONNECTION addresses, EXPORT_USER/HOST, Hostname, ...)
//     and home paths (the file's HOME values, /home/X, /Users/X, /root,
//     C:\Users\X, /global/u1/c/X, /pscratch/sd/c/X, /scratch/X, any path
//     through a directory named like a user) are masked in all text.
//   - Metadata rows named like credentials (*SECRET*, *TOKEN*, *PASSWORD*,
//     *AUTH*, ...) become REDACTED.
//   - Secrets anywhere: every TEXT and BLOB value of every table, whatever
//     its column's declared type (captured stdout/stderr in ANALYSIS_FILE,
//     DIAGNOSTIC_EVENT messages, NVTX text, process names, custom
//     metadata rows, environments stored as BLOB), is scanned with the
//     secret rules of secrets.go (cloud keys, tokens, JWTs, private keys,
//     URL credentials, NAME=VALUE and --NAME VALUE with credential-like
//     names); the secret part of a match becomes REDACTED. BLOB values
//     stay BLOBs.
//
// Names that analysis reads (kernel, range, API, thread names: the
// StringIds rows event tables reference) lose only home paths, long host
// names and addresses, and event rows are never changed, so the copy
// analyzes as the original does. The result is VACUUMed so removed bytes
// are gone from the file, and the same input gives the same bytes.
package redact

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/mattn/go-sqlite3" // SQLite driver

	"github.com/umtrace/umtrace/internal/outfile"
)

// Stats says what File changed.
type Stats struct {
	EnvRowsDeleted    int      `json:"env_rows_deleted"`    // environment rows removed (one variable each, or a whole dropped block)
	EnvEntriesDropped int      `json:"env_entries_dropped"` // variables dropped from environment blocks that kept others
	ValuesMasked      int      `json:"values_masked"`       // text cells rewritten
	Tables            []string `json:"tables"`              // tables that were changed
	// Replaced says what was replaced where: per table, column and rule,
	// the number of replacements (never the values). Column "(row)" counts
	// deleted environment rows.
	Replaced []Replacement `json:"replaced"`
}

// Replacement is one line of the report.
type Replacement struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Rule   string `json:"rule"`
	Count  int    `json:"count"`
}

// isMetaTable reports whether t holds metadata rather than events: its
// text is masked fully (user names too). Text in other tables (event
// tables, ENUM labels) and the names in StringIds that event tables
// reference are masked strictly, so that analysis reads the same names.
func isMetaTable(t string) bool {
	switch t {
	case "PROCESSES", "META_DATA_CAPTURE", "META_DATA_EXPORT", "EXPORT_META_DATA", "ANALYSIS_DETAILS", "ANALYSIS_FILE",
		"DIAGNOSTIC_EVENT": // messages, not names
		return true
	}
	return strings.HasPrefix(t, "TARGET_INFO_") || isEnvTable(t)
}

// TempPrefix starts the name of every working file redact makes next to
// its output (the copy being redacted, and SQLite's journal beside it).
// They are created 0600 and removed on error; a run killed outright may
// leave one, which the output-discipline cleanup removes by this prefix.
const TempPrefix = ".umtrace-tmp-"

// Sentinel errors, wrapped with the file name and detail. ErrNotSQLite and
// ErrCorrupt are the input's fault (the CLI exits 3); ErrVerify means the
// redacted copy failed its own check and was not handed over (exit 4).
var (
	ErrNotSQLite = errors.New("not a SQLite database")
	ErrCorrupt   = errors.New("corrupt SQLite file")
	ErrVerify    = errors.New("redacted copy failed verification")
)

// Options adjust File and Write.
type Options struct {
	// Check, when set, is called on the redacted copy after it passed
	// PRAGMA integrity_check and before it is handed over; an error keeps
	// it from being handed over (wrapped in ErrVerify). The CLI passes one
	// that opens the copy as an nsys export (this package cannot import
	// ingest/nsys, whose tests import it).
	Check func(path string) error
}

// File writes a redacted copy of the export in to out. in is only read;
// out is written through a 0600 working copy next to it (named with
// TempPrefix), redacted, verified and renamed into place at the end, so a
// failure never leaves a half-redacted or unredacted file under a name a
// user would pick up.
func File(in, out string) (*Stats, error) { return FileOpts(in, out, Options{}) }

// FileOpts is File with options.
func FileOpts(in, out string, o Options) (*Stats, error) {
	if err := checkDistinct(in, out); err != nil {
		return nil, err
	}
	tmp, discard, err := outfile.Reserve(filepath.Dir(out), TempPrefix+"redact-*")
	if err != nil {
		return nil, err
	}
	ok := false
	defer discard(&ok)
	st, err := Write(in, tmp, o)
	if err != nil {
		return nil, err
	}
	// The copy holds redacted bytes only now: give it the input's
	// permissions (at least owner read/write), as a copy would have.
	if fi, err := os.Stat(in); err == nil {
		if err := os.Chmod(tmp, fi.Mode().Perm()|0o600); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

// Write writes the redacted, verified copy of in to path, a private
// working file the caller owns (created 0600 if absent, truncated if
// present): it is the seam for callers that manage the output's name
// themselves. On error path may hold unredacted bytes: the caller removes
// it. SQLite's side files beside path are always removed.
func Write(in, path string, o Options) (*Stats, error) {
	if err := copyTo(in, path); err != nil {
		return nil, err
	}
	defer removeSide(path)
	st, err := redactDB(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := verify(path, o); err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := syncFile(path); err != nil {
		return nil, err
	}
	return st, nil
}

func removeSide(p string) {
	for _, suffix := range []string{"-wal", "-journal", "-shm"} {
		os.Remove(p + suffix)
	}
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func checkDistinct(in, out string) error {
	fi, err := os.Stat(in)
	if err != nil {
		return err
	}
	if fo, err := os.Stat(out); err == nil && os.SameFile(fi, fo) {
		return errors.New("output is the input file: redact never modifies its input")
	}
	return nil
}

// copyTo copies in (and a -wal or hot -journal beside it) to dst, 0600.
func copyTo(in, dst string) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(src, head); err != nil || string(head) != "SQLite format 3\x00" {
		return fmt.Errorf("%s: %w", in, ErrNotSQLite)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	removeSide(dst)
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := w.Chmod(0o600); err != nil {
		w.Close()
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// Committed rows in a -wal file, or a hot journal, are part of the
	// database: copy them beside the copy, and SQLite applies them when
	// redactDB opens it (switching to DELETE journal mode checkpoints).
	for _, suffix := range []string{"-wal", "-journal"} {
		side, err := os.ReadFile(in + suffix)
		if err != nil || len(side) == 0 {
			continue
		}
		if err := os.WriteFile(dst+suffix, side, 0o600); err != nil {
			return err
		}
	}
	return nil
}
