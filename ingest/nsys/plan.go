package nsys

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// Reading a table is three steps: the planner (this file) decides the
// read path and splits the table into parts in storage order, the
// executor (exec.go) reads the parts ahead of the consumer and hands
// their batches over in order, and each part's rows come through one
// rowReader: the page reader (pages.go), the bulk C reader (fastread.go)
// or the go-sqlite3 driver (scan.go).

// A rowReader reads the rows of one part of a table into b, through one
// read path, calling emit when b holds a batch; it returns the rows read.
type rowReader interface {
	read(b *ingest.Builder, q query, emit func() error) (rows int, err error)
}

// pageRows reads leaf pages through the page reader (read: pages.go).
type pageRows struct {
	r      *Reader
	s      *strs
	cols   []sqlitefile.Column // q's integer columns, then its text columns
	ncols  int                 // the table's declared columns
	leaves []uint32
}

// rangeRows reads rows lo <= rowid <= hi through SQLite: the bulk C
// reader, or the driver (text columns, or Options.Read = ReadDriverRows).
// hi is inclusive: a table may hold rowid 2^63-1, past which an exclusive
// bound has no value.
type rangeRows struct {
	r      *Reader
	s      *strs
	stmt   string
	lo, hi int64
	driver bool
}

func (p rangeRows) read(b *ingest.Builder, q query, emit func() error) (int, error) {
	if p.driver {
		return p.driverRead(b, q, emit)
	}
	return p.fast(b, q, emit)
}

// A part is a slice of a table in storage order, read by one rowReader
// into its own builder.
type part struct {
	what    string // names it in errors
	batch   int    // rows to reserve a batch for
	batches int    // the most batches it can emit
	rows    rowReader
	hold    bool  // hold the batches until the part is read (page parts)
	bytes   int64 // about what its batches hold (read-ahead is bounded in bytes)
}

// scanPlan is how one scan reads its table.
type scanPlan struct {
	src     string
	sel     string // SELECT ... FROM src, without a WHERE clause
	lo, hi  int64  // the table's rowid span
	maxRows int64  // the most rows the table's pages hold (Reader.maxRows)
	parts   []part
	ahead   int64  // what the parts read ahead hold at most (readAheadBytes, less for text)
	done    func() // the scan has read its rows (pageLayouts.scanLayout); nil for none
}

// maxParts bounds the parts of one table.
const maxParts = 4096

// planScan plans the scan of src with q's columns: nil for an empty table.
// Large tables are split into parts of about Options.ParallelRows/2 rows:
// leaf-page ranges for the page reader, rowid ranges for SQLite (which
// seeks a rowid range without a full scan).
func (x *scanner) planScan(src string, q query) (*scanPlan, error) {
	r, s := x.r, x.s
	sel := append(append([]string{}, q.ints...), q.strs...)
	var lo, hi sql.NullInt64
	if err := r.db.QueryRow(rowidSpanSQL(src)).Scan(&lo, &hi); err != nil {
		return nil, r.wrapDBErr("reading "+src, err)
	}
	if !lo.Valid {
		return nil, nil // empty table
	}
	p := &scanPlan{src: src, sel: fmt.Sprintf(`SELECT %s FROM "%s"`, strings.Join(sel, ", "), src), lo: lo.Int64, hi: hi.Int64, maxRows: r.maxRows(src)}
	parts := 1
	if n, par := spanRows(p.lo, p.hi, p.maxRows), r.opts.ParallelRows; n >= par {
		parts = int(min(n/max(par/2, 1), maxParts))
	}
	pt, done, err := r.layouts.scanLayout(src)
	if err != nil {
		return nil, err
	}
	if cols := pt.queryColumns(q); cols != nil {
		p.pageParts(r, s, pt, cols, parts)
		p.done = done
		return p, nil
	}
	done()
	if err := r.checkDriverTable(src); err != nil {
		return nil, err
	}
	p.rangeParts(r, s, parts, len(sel), r.opts.Read == ReadDriverRows || !fastAvailable || len(q.strs) > 0)
	return p, nil
}

// queryColumns maps q's columns to the page reader's (integers, then
// text); nil when the page reader cannot read them (or pt is nil).
func (pt *pageTable) queryColumns(q query) []sqlitefile.Column {
	if pt == nil {
		return nil
	}
	ic, ok1 := pt.columns(q.ints)
	sc, ok2 := pt.columns(q.strs)
	if !ok1 || !ok2 {
		return nil
	}
	for i := range ic {
		ic[i].IntOnly = true
	}
	for i := range sc {
		sc[i].Text = true
	}
	return append(ic, sc...)
}

// pageParts splits the table's leaves into parts for the page reader.
func (p *scanPlan) pageParts(r *Reader, s *strs, pt *pageTable, cols []sqlitefile.Column, parts int) {
	leaves := pt.leaves
	pageSize := r.pages.PageSize()
	// Parts of at most partBytes, so that several are read while the
	// consumer takes one. A part of text (NVTX names) holds its pages'
	// strings again in its batches: half as many pages a part and half
	// as many read ahead (name-diverse 12M, whose NVTX table is read
	// last, with 2.5M names of 200 bytes: its peak RSS 10 MiB lower).
	pb := int64(partBytes)
	p.ahead = readAheadBytes
	if slices.ContainsFunc(cols, func(c sqlitefile.Column) bool { return c.Text }) {
		pb, p.ahead = pb/2, readAheadBytes/2
	}
	parts = max(parts, int(min(int64(len(leaves))*int64(pageSize)/pb, maxParts)))
	parts = min(parts, len(leaves))
	per := len(leaves) / max(parts, 1)
	batchRows := r.opts.BatchRows
	rowsPer := int(min((p.hi-p.lo+1)/int64(max(parts, 1))+1, int64(batchRows)))
	for i := 0; i < parts; i++ {
		l := leaves[i*per:]
		if i < parts-1 {
			l = l[:per]
		}
		// A leaf holds at most a cell per 4 bytes of its page.
		maxRows := len(l) * pageSize / 4
		p.parts = append(p.parts, part{
			what:    fmt.Sprintf("pages %d..%d", l[0], l[len(l)-1]),
			batch:   rowsPer,
			batches: maxRows/batchRows + 2,
			rows:    pageRows{r: r, s: s, cols: cols, ncols: pt.ncols, leaves: l},
			hold:    true,
			bytes:   int64(len(l)) * int64(pageSize),
		})
	}
}

// rangeParts splits the table's rowid span into parts for SQLite; ncols is
// the columns selected. The span is counted in uint64 (rowids may run
// from -2^63 to 2^63-1), and a part's rows and batches are at most what
// the table can hold (rowids need not be dense: a span of 2^62 with two
// rows sized a batch channel of 2^46).
func (p *scanPlan) rangeParts(r *Reader, s *strs, parts, ncols int, driver bool) {
	stmt := p.sel + ` WHERE rowid >= ? AND rowid <= ?`
	batchRows := int64(r.opts.BatchRows)
	span := uint64(p.hi) - uint64(p.lo) // rows - 1 at most
	step := span/uint64(parts) + 1
	for i := 0; i < parts; i++ {
		a := int64(uint64(p.lo) + uint64(i)*step)
		b := p.hi // inclusive
		if uint64(p.hi)-uint64(a) >= step {
			b = int64(uint64(a) + step - 1)
		}
		rows := spanRows(a, b, p.maxRows)
		p.parts = append(p.parts, part{
			what:    fmt.Sprintf("rowid %d..%d", a, b),
			batch:   int(min(rows, batchRows)),
			batches: int(rows/batchRows) + 2,
			bytes:   rows * 8 * int64(ncols),
			rows:    rangeRows{r: r, s: s, stmt: stmt, lo: a, hi: b, driver: driver},
		})
	}
}
