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
)

// Stats says what File changed.
type Stats struct {
	EnvRowsDeleted    int      `json:"env_rows_deleted"`    // environment rows removed (one variable each, or a whole dropped block)
	EnvEntriesDropped int      `json:"env_entries_dropped"` // variables dropped from environment blocks that kept others
	ValuesMasked      int      `json:"values_masked"`       // text cells rewritten
	Tables            []string `json:"tables"`              // tables that were changed
}

// isMetaTable reports whether t holds metadata rather than events: its
// text is masked fully (user names too). Text in other tables (event
// tables, ENUM labels) and the names in StringIds that event tables
// reference are masked strictly, so that analysis reads the same names.
func isMetaTable(t string) bool {
	switch t {
	case "PROCESSES", "META_DATA_CAPTURE", "META_DATA_EXPORT", "EXPORT_META_DATA", "ANALYSIS_DETAILS", "ANALYSIS_FILE":
		return true
	}
	return strings.HasPrefix(t, "TARGET_INFO_") || isEnvTable(t)
}

// File writes a redacted copy of the export in to out. in is only read;
// out is written through a temporary file next to it and replaced at the
// end, so a failure never leaves a half-redacted out behind.
func File(in, out string) (*Stats, error) {
	if err := checkDistinct(in, out); err != nil {
		return nil, err
	}
	tmp, err := copyToTemp(in, out)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		for _, suffix := range []string{"-wal", "-journal", "-shm"} {
			os.Remove(tmp + suffix)
		}
		if !ok {
			os.Remove(tmp)
		}
	}()
	st, err := redactDB(tmp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
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

// ErrNotSQLite is returned (wrapped) when the input is not a SQLite file.
var ErrNotSQLite = errors.New("not a SQLite database")

func copyToTemp(in, out string) (string, error) {
	src, err := os.Open(in)
	if err != nil {
		return "", err
	}
	defer src.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(src, head); err != nil || string(head) != "SQLite format 3\x00" {
		return "", fmt.Errorf("%s: %w", in, ErrNotSQLite)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	dst, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".redact-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(dst.Name())
		return "", err
	}
	if err := dst.Close(); err != nil {
		os.Remove(dst.Name())
		return "", err
	}
	// Committed rows in a -wal file, or a hot journal, are part of the
	// database: copy them beside the copy, and SQLite applies them when
	// redactDB opens it (switching to DELETE journal mode checkpoints).
	for _, suffix := range []string{"-wal", "-journal"} {
		side, err := os.ReadFile(in + suffix)
		if err != nil || len(side) == 0 {
			continue
		}
		if err := os.WriteFile(dst.Name()+suffix, side, 0o600); err != nil {
			os.Remove(dst.Name())
			return "", err
		}
	}
	// CreateTemp makes the file 0600; give the copy the input's permissions.
	if fi, err := src.Stat(); err == nil {
		if err := os.Chmod(dst.Name(), fi.Mode().Perm()|0o600); err != nil {
			os.Remove(dst.Name())
			return "", err
		}
	}
	return dst.Name(), nil
}
