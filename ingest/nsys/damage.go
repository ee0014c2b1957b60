package nsys

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// Corruption policy. A damaged file is an error (ErrCorrupt, exit 3 in the
// CLI), not a warning next to figures that changed: when the page reader
// doubts a page of a table (the fallback to SQLite below it), SQLite's
// PRAGMA integrity_check of that table decides, and where the table is
// read through SQLite alone (UMTRACE_READER=driver, files the page reader
// does not take) its quick_check runs before the table is read, since
// SQLite reads past much damage without a word. Options.Salvage keeps
// today's reading instead (the page reader's good rows, SQLite's for the
// rest), says so in a warning and marks the reader Partial. A doubt that
// integrity_check does not share is the page reader's own: the table is
// read through SQLite, with a warning, as before.

// ErrDamaged marks the ErrCorrupt errors of damage SQLite's checks found
// in a table the reader reads: Options.Salvage reads on around it.
var ErrDamaged = errors.New("damaged")

// damage records what the reader found damaged.
type damage struct {
	mu      sync.Mutex
	partial bool
	checked map[string]error // table → its check's verdict (nil: ok)
}

// Partial reports whether the reader found damage and, under
// Options.Salvage, read around it: results from it are partial.
func (r *Reader) Partial() bool {
	r.dmg.mu.Lock()
	defer r.dmg.mu.Unlock()
	return r.dmg.partial
}

// doubted is the page reader's doubt about table (cause) confirmed or not
// by SQLite's integrity_check: an ErrCorrupt error naming the file, the
// table and the first problem, or nil (read on through SQLite) after noting
// msg, with "salvaged" when the damage is real and Options.Salvage is set.
func (r *Reader) doubted(table string, cause error, msg string) error {
	err := r.checkTable(table, "integrity_check")
	if errors.Is(err, ErrOutOfMemory) {
		return err
	}
	if err == nil {
		// The table's own tree is sound, yet the page reader doubts
		// it: a page another tree owns (a page of another table in
		// place of one of this one's) shows only in the whole file's
		// check. Rare (no real export has made the page reader
		// doubt), so its cost is no concern.
		err = r.checkTable("", "quick_check")
	}
	if err != nil {
		if !r.opts.Salvage || errors.Is(err, ErrOutOfMemory) {
			return fmt.Errorf("%w (the page reader: %v)", err, cause)
		}
		r.notes.add(msg + "; the file is damaged (" + shortErr(err) + "): results are partial (--salvage)")
		return nil
	}
	r.notes.add(msg)
	return nil
}

// checkDriverTable runs quick_check on a table SQLite alone reads: an
// ErrCorrupt error unless it passes or Options.Salvage is set (then a
// warning, and the reader is partial).
func (r *Reader) checkDriverTable(table string) error {
	r.dmg.mu.Lock()
	_, done := r.dmg.checked[table] // a doubt's check: noted then
	r.dmg.mu.Unlock()
	err := r.checkTable(table, "quick_check")
	if errors.Is(err, ErrOutOfMemory) {
		return err
	}
	if err == nil || (done && r.opts.Salvage) {
		return nil
	}
	if !r.opts.Salvage {
		return err
	}
	r.notes.add(fmt.Sprintf("%s: the file is damaged (%s): read as SQLite reads it, results are partial (--salvage)", table, shortErr(err)))
	return nil
}

// checkTable runs PRAGMA pragma(table) once per table: nil when SQLite
// finds nothing, else an ErrCorrupt error naming the file, the table and
// SQLite's first message (the reader is then partial if it reads on).
func (r *Reader) checkTable(table, pragma string) error {
	r.dmg.mu.Lock()
	defer r.dmg.mu.Unlock()
	if err, ok := r.dmg.checked[table]; ok {
		return err
	}
	var first sql.NullString
	q := fmt.Sprintf(`PRAGMA %s("%s")`, pragma, strings.ReplaceAll(table, `"`, `""`))
	if table == "" {
		q = `PRAGMA ` + pragma // the whole file
	}
	qerr := r.db.QueryRow(q).Scan(&first)
	var err error
	switch {
	case qerr != nil && strings.Contains(qerr.Error(), "out of memory"):
		// SQLite's memory, not the file: ErrOutOfMemory (exit 4),
		// not damage, and not kept (under the ulimit of a test, the
		// whole check of a small file at open ran out of memory and
		// was reported as a corrupt file, exit 3).
		return r.wrapDBErr(what(table), qerr)
	case strings.Contains(first.String, "error code=7"):
		// The check's own answer that it could not read a page for
		// want of memory (SQLITE_NOMEM): the same.
		return fmt.Errorf("%s: %s: %w (SQLite)", r.path, what(table), ErrOutOfMemory)
	case qerr != nil:
		err = fmt.Errorf("%s: %w: %s: %v%w", r.path, ErrCorrupt, what(table), qerr, errDamaged)
	case first.String != "ok":
		err = fmt.Errorf("%s: %w: %s: %s%w", r.path, ErrCorrupt, what(table), firstProblem(first.String), errDamaged)
	}
	if r.dmg.checked == nil {
		r.dmg.checked = map[string]error{}
	}
	r.dmg.checked[table] = err
	if err != nil && r.opts.Salvage {
		r.dmg.partial = true
	}
	return err
}

// errDamaged wraps ErrDamaged without adding to the message.
var errDamaged = quiet{ErrDamaged}

type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// metaTables are the small tables the reader reads through SQLite besides
// the ones it scans (detect.go, procinfo.go).
var metaTables = []string{schema.MetaDataCapture, schema.MetaDataExport, schema.ExportMetaData, schema.AnalysisDetails,
	schema.SessionStartTime, schema.Processes, schema.DiagnosticEvent, schema.ThreadNames.Name, schema.GPU.Name, schema.GPU.Alt[0]}

// smallTableLeaves: a table of at most this many leaf pages is checked
// whole when the reader opens the file (milliseconds), whichever path
// reads it; SQLite reads small tables past damage it does not look for (a
// page of another table in place of one of its own, a text column holding
// numbers), and the page reader's structural checks are not SQLite's.
// Larger tables rely on the page reader's checks (doubted), or are
// quick_checked before SQLite reads them (checkDriverTable).
const smallTableLeaves = 256

// wholeCheckBytes: a file of at most this size is checked whole at open
// (PRAGMA integrity_check, tens of milliseconds) instead of table by table: a
// table's page replaced by a page of another table (swapped, copied) is
// sound in the table's own tree and shows only in the other's. Larger
// files are checked table by table (a whole check of a 100 MB export
// took 0.4 s of CPU), so such damage in them can go unseen, as it does
// when SQLite reads them.
const wholeCheckBytes = 16 << 20

// checkReadTables checks, at open, the tables the reader reads that are
// small: every metadata table, and the scanned tables of at most
// smallTableLeaves leaves (all of them through SQLite when there is no
// page reader: the scans check the large ones).
func (r *Reader) checkReadTables() error {
	if st, err := os.Stat(r.path); err == nil && st.Size() <= wholeCheckBytes {
		// Small enough to check whole: damage that puts a page of one
		// table in place of another's shows only there.
		if err := r.checkTable("", "integrity_check"); err != nil {
			if !r.opts.Salvage || errors.Is(err, ErrOutOfMemory) {
				return err
			}
			r.notes.add(fmt.Sprintf("the file is damaged (%s): read as SQLite reads it, results are partial (--salvage)", shortErr(err)))
		}
		return nil
	}
	roots := map[string]int64{}
	rows, err := r.db.Query(`SELECT name, rootpage FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return r.wrapDBErr("reading schema", err)
	}
	for rows.Next() {
		var n string
		var root sql.NullInt64
		if rows.Scan(&n, &root) == nil {
			roots[n] = root.Int64
		}
	}
	rows.Close()
	tables := append([]string{}, metaTables...)
	for _, t := range append(schema.Names(schema.Tables...), schema.StringIds.Name) {
		if r.pages == nil || !r.opts.pageReads() {
			break // the scans check them (checkDriverTable)
		}
		if more, err := r.pages.MoreLeaves(uint32(roots[t]), smallTableLeaves); err == nil && more {
			continue
		}
		tables = append(tables, t)
	}
	for _, t := range tables {
		if roots[t] <= 0 || roots[t] > 1<<32-1 {
			continue
		}
		if err := r.checkTable(t, "integrity_check"); err != nil {
			if !r.opts.Salvage || errors.Is(err, ErrOutOfMemory) {
				return err
			}
			r.notes.add(fmt.Sprintf("%s: the file is damaged (%s): read as SQLite reads it, results are partial (--salvage)", t, shortErr(err)))
		}
	}
	return nil
}

// what names a table, or the whole file for "".
func what(table string) string {
	if table == "" {
		return "integrity check"
	}
	return "table " + table
}

// firstProblem is the first line of an integrity_check answer that names
// a problem ("Tree 2 page 69 cell 12: Offset 16566 out of range 333..4092"),
// without the "*** in database main ***" heading.
func firstProblem(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "***") {
			return l
		}
	}
	return strings.TrimSpace(s)
}

// shortErr is err's message without the file name the warning's line
// already has.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, ErrCorrupt.Error()); i > 0 {
		s = s[i:]
	}
	return s
}
