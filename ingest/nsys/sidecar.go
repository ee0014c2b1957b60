package nsys

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
)

// A database can carry committed rows outside its main file: in a -wal
// file (WAL mode, not yet checkpointed), or it can have a hot -journal
// (a write interrupted before it finished: the main file holds half of
// it, and SQLite rolls it back on the next read). Opening the file
// immutable would ignore both, and opening it as SQLite normally does
// would write to it (a -shm file, the checkpoint, the rollback). So such a
// database is copied, with its sidecar, into a temporary directory, where
// SQLite recovers it; the reader reads the copy, and the input stays as it
// was.

// journalMagic starts a rollback journal's header; a journal whose header
// is zeroed is not hot (it was committed in PERSIST mode).
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// sidecar returns the -wal or hot -journal file of path that SQLite would
// read, or "".
func sidecar(path string) string {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return path + "-wal"
	}
	f, err := os.Open(path + "-journal")
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, len(journalMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, journalMagic) {
		return ""
	}
	return path + "-journal"
}

// recoverCopy copies path and its sidecar side into a new temporary
// directory and lets SQLite apply the sidecar there (checkpoint the WAL,
// roll the journal back). It returns the directory and the recovered
// copy, a plain rollback-journal database.
func recoverCopy(path, side string) (dir, copyPath string, err error) {
	dir, err = os.MkdirTemp("", "umtrace-recover-*")
	if err != nil {
		return "", "", fmt.Errorf("%s: copying it to read %s: %w", path, side, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	copyPath = filepath.Join(dir, "trace.sqlite")
	suffix := side[len(path):] // "-wal" or "-journal"
	for src, dst := range map[string]string{path: copyPath, side: copyPath + suffix} {
		if err := copyFile(src, dst); err != nil {
			return "", "", fmt.Errorf("%s: copying it to read %s: %w", path, side, err)
		}
	}
	u := url.URL{Scheme: "file", Path: copyPath}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return "", "", fmt.Errorf("%s: reading %s: %w", path, side, err)
	}
	defer db.Close()
	var n int64
	var mode string
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		return "", "", fmt.Errorf("%s: reading %s: %w (%v)", path, side, ErrCorrupt, err)
	}
	if err := db.QueryRow(`PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil {
		return "", "", fmt.Errorf("%s: reading %s: %w (%v)", path, side, ErrCorrupt, err)
	}
	if err := db.Close(); err != nil {
		return "", "", fmt.Errorf("%s: reading %s: %w", path, side, err)
	}
	return dir, copyPath, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
