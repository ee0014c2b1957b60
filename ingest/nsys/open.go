// Package nsys reads Nsight Systems SQLite exports (nsys 2020.5 to 2025.x)
// into Arrow record batches of the ingest tables.
//
// The reader opens the file read-only and immutable, detects what the export
// holds by table and column presence (never by version number), and streams
// each table in batches without ordering it: exports do not guarantee row
// order, so consumers must not assume it.
package nsys

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/mattn/go-sqlite3" // SQLite driver

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// Sentinel errors, wrapped with the file name and detail.
var (
	ErrNotSQLite     = errors.New("not a SQLite database")
	ErrNotNsysExport = errors.New("not an Nsight Systems SQLite export")
	ErrTruncated     = errors.New("truncated SQLite file")
	ErrCorrupt       = errors.New("corrupt SQLite file")
	// ErrOutOfMemory is SQLite running out of memory (SQLITE_NOMEM): not
	// the input's fault.
	ErrOutOfMemory = errors.New("out of memory")
)

// store is the open database: its queries and the errors that name the
// file.
type store struct {
	path string
	uri  string // read-only, immutable SQLite URI of path
	db   *sql.DB
}

// Reader is an open nsys export. It implements ingest.Source.
type Reader struct {
	store
	opts Options
	info ingest.TraceInfo
	cols tableSet // table -> column set (present tables only)

	strtab stringTable // StringIds (detect.go)

	checks checks // range-check warnings of finished scans
	notes  notes  // warnings about the read (a fallback to SQLite)

	pages   *sqlitefile.File // the page reader; nil where it cannot read this file
	tmpDir  string           // a recovered copy's directory (sidecar.go), removed by Close
	layouts pageLayouts      // the page reader's plans of the tables (pages.go)
	dmg     damage           // damage found, and tables checked (damage.go)
}

// Open opens an nsys SQLite export read-only. It never writes to the file.
func Open(path string, opts Options) (*Reader, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	// Committed rows in a -wal file, or a hot journal: read a recovered
	// copy (sidecar.go), never the input as it is nor the input changed.
	file, tmpDir, side := path, "", sidecar(path)
	if side != "" {
		if tmpDir, file, err = recoverCopy(path, side); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&immutable=1&_query_only=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("%s: opening: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	r := newReader(store{path: path, uri: u.String(), db: db}, opts)
	r.tmpDir = tmpDir
	if side != "" {
		r.notes.add(fmt.Sprintf("%s: read with %s applied, from a temporary copy", filepath.Base(path), filepath.Base(side)))
	}
	if err := r.detect(); err != nil {
		r.Close()
		return nil, err
	}
	// Without the page reader (WAL files, UTF-16, an unreadable header)
	// every table goes through SQLite.
	if opts.Read != ReadDriver {
		r.pages, _ = sqlitefile.Open(file)
	}
	if err := r.checkReadTables(); err != nil { // damage.go
		r.Close()
		return nil, err
	}
	return r, nil
}

// newReader returns a Reader of st, its parts wired to it.
func newReader(st store, opts Options) *Reader {
	r := &Reader{store: st, opts: opts}
	r.strtab.r = r
	r.layouts.r = r
	return r
}

// Close closes the database.
func (r *Reader) Close() error {
	if r.pages != nil {
		r.pages.Close()
	}
	err := r.db.Close()
	if r.tmpDir != "" {
		os.RemoveAll(r.tmpDir)
	}
	return err
}

// Info describes the export.
func (r *Reader) Info() *ingest.TraceInfo { return &r.info }

// DB exposes the read-only database handle, for cross-checks in tests and
// for raw queries (redaction, counting).
func (r *Reader) DB() *sql.DB { return r.db }

// checkHeader rejects files that cannot be SQLite databases, and truncated
// ones, before the driver sees them: the driver's own errors ("file is not a
// database", "database disk image is malformed") come late and say little.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	if st.IsDir() {
		return fmt.Errorf("%s: is a directory, not an nsys SQLite export", path)
	}
	if st.Size() == 0 {
		return fmt.Errorf("%s: empty file: %w", path, ErrNotSQLite)
	}
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: reading header: %w", path, err)
	}
	if n < 16 || !bytes.Equal(hdr[:16], []byte("SQLite format 3\x00")) {
		what := "binary data"
		if isText(hdr[:n]) {
			what = "text"
		}
		if bytes.HasPrefix(hdr[:n], []byte("PK\x03\x04")) || strings.HasSuffix(path, ".nsys-rep") || strings.HasSuffix(path, ".qdrep") {
			return fmt.Errorf("%s: %w (an nsys report file? export it with: nsys export --type sqlite %s)", path, ErrNotSQLite, path)
		}
		return fmt.Errorf("%s: %w (the file starts with %s)", path, ErrNotSQLite, what)
	}
	if n < 100 {
		return fmt.Errorf("%s: %w: %d-byte header", path, ErrTruncated, n)
	}
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	// The in-header page count is valid when the change counters agree.
	if pages > 0 && bytes.Equal(hdr[24:28], hdr[92:96]) {
		if want := pages * pageSize; st.Size() < want {
			return fmt.Errorf("%s: %w: %d of %d bytes (%.0f%%) present", path, ErrTruncated, st.Size(), want, 100*float64(st.Size())/float64(want))
		}
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x09 || (c > 0x0d && c < 0x20) {
			return false
		}
	}
	return true
}

// wrapDBErr turns driver errors into messages that name the file.
func (r *store) wrapDBErr(what string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "out of memory") {
		return fmt.Errorf("%s: %s: %w (SQLite)", r.path, what, ErrOutOfMemory)
	}
	if strings.Contains(msg, "malformed") || strings.Contains(msg, "not a database") || strings.Contains(msg, "disk I/O error") {
		// One line: a malformed schema's message quotes its SQL.
		return fmt.Errorf("%s: %s: %w (%s)", r.path, what, ErrCorrupt, strings.Join(strings.Fields(err.Error()), " "))
	}
	return fmt.Errorf("%s: %s: %w", r.path, what, err)
}
