package nsys

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// The page reader decodes the columns of the large tables straight from
// the file's b-tree pages (internal/sqlitefile): no SQLite virtual machine,
// no per-value C calls, and a table splits into leaf-page ranges that
// decode in parallel. SQLite still answers every metadata question (root
// pages, column order) and reads whatever the page reader cannot; the
// tests check both give the same rows on every shared export.

// pageCorrupt is the page reader's error on a page it doubts: the part's
// rows are dropped and SQLite reads the table from rowid last+1 on (last
// bounds the part from below; math.MinInt64: from the table's start).
type pageCorrupt struct {
	last int64
	err  error
}

func (e *pageCorrupt) Error() string { return e.err.Error() }
func (e *pageCorrupt) Unwrap() error { return e.err }

// pageTable is how the page reader reads one table.
type pageTable struct {
	ncols  int // declared columns
	root   uint32
	cols   map[string]sqlitefile.Column // lower-case column name → record slot
	leaves []uint32
	scans  int  // scans reading it now (scanLayout)
	pinned bool // pageLayout's: kept for the reader's life
}

// pageLayouts are the page reader's plans of the tables: a table's is
// made for its first scan and dropped, with its leaves' bounds, after its
// last scan ends (scanLayout), unless pageLayout pinned it.
type pageLayouts struct {
	r       *Reader
	mu      sync.Mutex
	m       map[string]*pageTable
	loading map[string]*layoutLoad // plans being made, by table
}

// layoutLoad is a plan being made; done is closed when pt and err are set.
// A table's plan is made once at a time, different tables' at once: made
// under pageLayouts.mu, the scans of a 16-core read waited for each
// other's plans (the interior pages of every table, one table at a time).
type layoutLoad struct {
	done chan struct{}
	pt   *pageTable
	err  error
}

// pageLayout returns the page reader's plan for table src, or nil when the
// table must go through SQLite (WITHOUT ROWID, generated columns, an
// unreadable default, or a file the page reader does not support), kept
// for the reader's life (StringIds, looked up through the analysis).
func (pl *pageLayouts) pageLayout(src string) (*pageTable, error) {
	return pl.layout(src, usePin)
}

// peekLayout is src's plan for a look at it (its leaves), not a scan: a
// plan it makes is kept for the scan that follows, which drops it.
func (pl *pageLayouts) peekLayout(src string) (*pageTable, error) {
	return pl.layout(src, usePeek)
}

// How layout's caller uses the plan.
const (
	usePin  = iota // for the reader's life
	useScan        // for one scan, which calls its done
	usePeek        // for a look, now
)

// scanLayout is pageLayout for one scan, which calls done when it has
// read its rows: the last scan of a table drops its plan and its leaves'
// bounds (sqlitefile.File.Forget), megabytes for a large table, which the
// tables still being read would otherwise carry to the end of the read,
// the analysis' memory peak. A later scan makes the plan again.
func (pl *pageLayouts) scanLayout(src string) (pt *pageTable, done func(), err error) {
	pt, err = pl.layout(src, useScan)
	if pt == nil || err != nil {
		return pt, func() {}, err
	}
	return pt, func() {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if pt.scans--; pt.scans == 0 && !pt.pinned && pl.m[src] == pt {
			delete(pl.m, src)
			pl.r.pages.Forget(pt.leaves)
		}
	}, nil
}

// layout returns src's plan, made when there is none, for use (usePin,
// useScan, usePeek).
func (pl *pageLayouts) layout(src string, use int) (*pageTable, error) {
	r := pl.r
	if r.pages == nil || !r.opts.pageReads() {
		return nil, nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pt, ok := pl.m[src]
	for !ok {
		if ld := pl.loading[src]; ld != nil {
			// Another scan is making it: wait, then look again (the
			// plan may be gone already, dropped by its last scan).
			pl.mu.Unlock()
			<-ld.done
			pl.mu.Lock()
			if ld.err != nil {
				return nil, ld.err
			}
			pt, ok = pl.m[src]
			continue
		}
		ld := &layoutLoad{done: make(chan struct{})}
		if pl.loading == nil {
			pl.loading = map[string]*layoutLoad{}
		}
		pl.loading[src] = ld
		func() {
			pl.mu.Unlock()
			defer pl.mu.Lock()
			ld.pt, ld.err = r.layouts.loadPageLayout(src)
		}()
		delete(pl.loading, src)
		close(ld.done)
		if ld.err != nil {
			return nil, ld.err
		}
		if pl.m == nil {
			pl.m = map[string]*pageTable{}
		}
		pt, ok = ld.pt, true
		pl.m[src] = pt
	}
	if pt != nil {
		switch use {
		case usePin:
			pt.pinned = true
		case useScan:
			pt.scans++
		}
	}
	return pt, nil
}

var (
	withoutRowid = regexp.MustCompile(`(?i)\)\s*WITHOUT\s+ROWID`)
	// A column declared INTEGER PRIMARY KEY DESC is not the rowid.
	pkDesc = regexp.MustCompile(`(?i)PRIMARY\s+KEY\s+DESC`)
)

func (pl *pageLayouts) loadPageLayout(src string) (*pageTable, error) {
	r := pl.r
	var root int64
	var ddl sql.NullString
	err := r.db.QueryRow(`SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ?`, src).Scan(&root, &ddl)
	if err != nil {
		return nil, r.wrapDBErr("reading the schema of "+src, err)
	}
	if root <= 0 || root > 1<<32-1 || withoutRowid.MatchString(ddl.String) {
		return nil, nil
	}
	rows, err := r.db.Query(`SELECT cid, name, type, dflt_value, pk, hidden FROM pragma_table_xinfo(?)`, src)
	if err != nil {
		return nil, r.wrapDBErr("reading the columns of "+src, err)
	}
	defer rows.Close()
	pt := &pageTable{root: uint32(root), cols: map[string]sqlitefile.Column{}}
	pks := 0
	var rowidCol string
	for rows.Next() {
		var cid, pk, hidden int64
		var name, typ string
		var dflt sql.NullString
		if err := rows.Scan(&cid, &name, &typ, &dflt, &pk, &hidden); err != nil {
			return nil, r.wrapDBErr("reading the columns of "+src, err)
		}
		if hidden != 0 {
			return nil, nil // generated columns are not stored in records
		}
		col := sqlitefile.Column{Index: int(cid)}
		if !sqlitefile.ColumnDefault(&col, typ, dflt) {
			return nil, nil // a default only SQLite gives right
		}
		if pk > 0 {
			pks++
			if strings.EqualFold(typ, "INTEGER") {
				rowidCol = strings.ToLower(name)
			}
		}
		pt.cols[strings.ToLower(name)] = col
		pt.ncols++
	}
	if err := rows.Err(); err != nil {
		return nil, r.wrapDBErr("reading the columns of "+src, err)
	}
	if pks == 1 && rowidCol != "" && pkDesc.MatchString(ddl.String) {
		return nil, nil // which column is the rowid is SQLite's call
	}
	if pks == 1 && rowidCol != "" {
		// An INTEGER PRIMARY KEY is the rowid; its record slot is NULL.
		c := pt.cols[rowidCol]
		c.Index = sqlitefile.RowID
		pt.cols[rowidCol] = c
	}
	pt.leaves, err = r.pages.Leaves(pt.root)
	if errors.Is(err, sqlitefile.ErrCorrupt) && r.opts.Read != ReadPages {
		// A doubtful interior page: the whole table is SQLite's.
		return nil, r.doubted(src, err, fmt.Sprintf("%s: the page reader doubted its b-tree (%v); the table was read through SQLite", src, err))
	}
	if err != nil {
		return nil, r.wrapDBErr("reading "+src, err)
	}
	return pt, nil
}

// columns maps a query's integer expressions (NULL or a quoted column
// name) to page reader columns; ok is false if any is something else.
func (pt *pageTable) columns(exprs []string) ([]sqlitefile.Column, bool) {
	out := make([]sqlitefile.Column, len(exprs))
	for i, e := range exprs {
		if e == "NULL" {
			out[i] = sqlitefile.Column{Index: sqlitefile.Null}
			continue
		}
		c, ok := pt.cols[strings.ToLower(strings.Trim(e, `"`))]
		if !ok {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

// read reads the rows of leaves through the page reader, fastRows at
// a time, into b. cols are q's integer columns, then its text columns.
func (p pageRows) read(b *ingest.Builder, q query, emit func() error) (rows int, err error) {
	r, s, cols, ncols, leaves := p.r, p.s, p.cols, p.ncols, p.leaves
	cur := r.pages.NewCursor(leaves, cols)
	cur.SetColumns(ncols) // the table's declared columns
	n, ni := len(cols), len(q.ints)
	// Rows are decoded straight into the sql.NullInt64s the filler takes
	// (each row's iv is a window of vals), not copied there value by value.
	vals := make([]sql.NullInt64, fastRows*n)
	nulls := make([]uint8, fastRows*n)
	var texts []string
	if len(q.strs) > 0 {
		texts = make([]string, fastRows*n)
		// Texts as views of the cursor's pages, valid until the next
		// ReadText: the builder's dictionaries copy what they keep (a
		// text column of distinct names cost a string per row).
		cur.SetViews()
	}
	sv := make([]sql.NullString, len(q.strs))
	for {
		before := cur.NotInts()
		got, err := cur.ReadNullable(vals, nulls, texts)
		notInt := cur.NotInts() != before
		i := 0
		if q.block != nil && !notInt && len(q.strs) == 0 {
			var berr error
			i, berr = q.addBlock(b, vals, got, n, s, emit)
			rows += i
			if berr != nil {
				return rows, berr
			}
		}
		for ; i < got; i++ {
			iv := vals[i*n : i*n+ni : i*n+ni]
			if notInt {
				for c, z := range nulls[i*n : i*n+ni] {
					if z == sqlitefile.NotInt {
						q.notInt(c)
					}
				}
			}
			for c := range sv {
				sv[c] = sql.NullString{String: texts[i*n+ni+c], Valid: nulls[i*n+ni+c] == 0}
			}
			rows++
			if err := q.add(b, iv, sv, s, emit); err != nil {
				return rows, err
			}
		}
		if err == io.EOF {
			return rows, nil
		}
		if errors.Is(err, sqlitefile.ErrCorrupt) && r.opts.Read != ReadPages {
			// The part is SQLite's from its start: the rows past its
			// parents' lower bound.
			pc := &pageCorrupt{err: err}
			pc.last, _ = r.pages.Bound(leaves[0])
			return rows, pc
		}
		if err != nil {
			return rows, err
		}
	}
}
