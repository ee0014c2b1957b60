package nsys

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// Scan streams table t as record batches (see ingest.Source). Rows come
// in the export's storage order, which nsys does not guarantee to be time
// order.
func (r *Reader) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	return r.ScanColumns(t, nil, fn)
}

// ScanColumns is Scan with only the named columns filled; the others are
// null (ingest.ColumnScanner). Empty cols means every column.
func (r *Reader) ScanColumns(t *ingest.Table, cols []string, fn func(arrow.RecordBatch) error) error {
	return r.ScanPrepared(t, cols, nil, func(rec arrow.RecordBatch, _ any) error { return fn(rec) })
}

// ScanPrepared is ScanColumns with prep run on each batch by the part's
// reader (ingest.PreparedScanner).
func (r *Reader) ScanPrepared(t *ingest.Table, cols []string, prep func(arrow.RecordBatch) any, fn func(arrow.RecordBatch, any) error) error {
	src := r.SourceTable(t)
	if src == "" {
		return nil
	}
	strs, err := r.strtab.stringIDs()
	if err == nil && t == ingest.Kernel && (len(cols) == 0 || slices.Contains(cols, ingest.ColName) || slices.Contains(cols, ingest.ColShortName)) {
		strs, err = r.strtab.stringDict() // every kernel name as a string
	}
	if err != nil {
		return err
	}
	// Each part checks its rows on its own; the parts' findings are added
	// up in part (storage) order, so the example a warning quotes is the
	// first bad row's, not whichever part got to one first.
	var mu sync.Mutex
	var cks []*checks
	x := &scanner{r: r, t: t, s: strs, prep: prep}
	x.newQuery = func() query {
		ck := &checks{win: r.window()}
		mu.Lock()
		cks = append(cks, ck)
		mu.Unlock()
		return newQuery(r.cols, r.opts.BatchRows, t, src, cols, ck)
	}
	err = x.run(src, fn)
	all := &checks{}
	for _, ck := range cks {
		all.addPart(ck)
	}
	r.checks.merge(all)
	return err
}

// A query is the SELECT list for one table: integer expressions, then text
// expressions, and a row filler that maps them to Arrow columns.
type query struct {
	cols []string // projection (nil: all)
	ints []string
	strs []string
	fill fillFunc
	// block fills plain blocks of rows a column at a time (block.go);
	// nil for tables without one.
	block blockFunc
	// batchRows is the rows of a full batch (Options.BatchRows).
	batchRows int
	ck        *checks // the scan's range checks
	src       string  // the source table
}

// notInt records a text or blob value in integer expression c, which
// every read path reads as NULL (sqlitefile.NotInt).
func (q *query) notInt(c int) {
	q.ck.badText(q.src, strings.Trim(q.ints[c], `"`), "text or blob values in an integer column, read as NULL")
}

var versionSuffix = regexp.MustCompile(`_v[0-9]+$`)

// StripVersion removes the trailing _vNNNN suffix nsys's own reports strip
// from CUDA API names (cudaMemcpy_v3020 → cudaMemcpy).
func StripVersion(name string) string { return versionSuffix.ReplaceAllString(name, "") }

// newQuery builds the SELECT list of table t's scan over src (of the
// tables ts) as schema declares the table, and the row filler that reads
// it into batches of batchRows rows.
func newQuery(ts tableSet, batchRows int, t *ingest.Table, src string, cols []string, ck *checks) query {
	decl := schema.ForModel(t)
	if decl == nil || fillers[t] == nil {
		panic("nsys: no query for table " + t.Name)
	}
	names := make([]string, len(decl.Cols))
	q := query{cols: cols, ck: ck, src: src, batchRows: batchRows}
	for i := range decl.Cols {
		var e string
		e, names[i] = ts.selectExpr(src, &decl.Cols[i], cols)
		q.ints = append(q.ints, e)
	}
	tr := newTableRead(decl, src, ck, t.Index, names)
	for i := range decl.Texts {
		e, _ := ts.selectExpr(src, &decl.Texts[i], cols)
		q.strs = append(q.strs, e)
	}
	q.fill = fillers[t](tr)
	if mk := blockFillers[t]; mk != nil {
		q.block = mk(tr)
	}
	return q
}

// selectExpr returns what a scan selects for column c of table src when it
// asks for the model columns cols (nil: all): the first of c's names the
// table has, quoted, or NULL where it has none or c is lazy and not asked
// for; and that name ("NULL": none).
func (ts tableSet) selectExpr(src string, c *schema.Column, cols []string) (expr, name string) {
	name = "NULL"
	if c.Always || ts.has(src, c.Name) {
		name = c.Name
	} else {
		for _, n := range c.Alt {
			if ts.has(src, n) {
				name = n
				break
			}
		}
	}
	if name == "NULL" || c.Lazy && len(cols) > 0 && !slices.ContainsFunc(c.Feeds, func(f string) bool { return slices.Contains(cols, f) }) {
		return "NULL", name
	}
	return `"` + name + `"`, name
}

// column appends the string with id to column i: an index into StringIds
// itself where it was read by the page reader (no copy), else a value of
// the batch's own dictionary (name resolves id).
func (s *strs) column(b *ingest.Builder, i int, id int64, name func(int64) string) {
	if s.dict != nil && s.has(id) {
		b.DictIndex(i, s.dict, int32(id))
		return
	}
	b.StringID(i, id, name)
}

// lookup resolves a nullable StringIds reference ("" for NULL).
func lookup(ck *checks, s *strs, table, col string, v sql.NullInt64) string {
	if !v.Valid {
		return ""
	}
	ck.ref(s, table, col, v.Int64)
	return s.get(v.Int64)
}

// add fills one row from its values (every read path ends here) and
// emits the batch when it is full.
func (q *query) add(b *ingest.Builder, iv []sql.NullInt64, sv []sql.NullString, s *strs, emit func() error) error {
	if !q.fill(b, iv, sv, s) {
		return nil
	}
	b.EndRow()
	if b.Rows() >= q.batchRows {
		return emit()
	}
	return nil
}

// rowidSpanSQL selects the smallest and largest rowid of table. Each is its
// own subquery: SQLite answers a lone min() or max() of the rowid with one
// b-tree seek, but both in one SELECT with a full scan.
func rowidSpanSQL(table string) string {
	return `SELECT (SELECT min(rowid) FROM "` + table + `"), (SELECT max(rowid) FROM "` + table + `")`
}

// driverRead reads stmt's rows through the go-sqlite3 driver directly
// (no database/sql conversion); it handles text columns, which the bulk
// reader does not.
func (p rangeRows) driverRead(b *ingest.Builder, q query, emit func() error) (rows int, err error) {
	r, s, stmt, lo, hi := p.r, p.s, p.stmt, p.lo, p.hi
	conn, err := r.db.Conn(context.Background())
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	iv := make([]sql.NullInt64, len(q.ints))
	sv := make([]sql.NullString, len(q.strs))
	dest := make([]driver.Value, len(q.ints)+len(q.strs))
	err = conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("sqlite driver does not support direct queries")
		}
		rs, err := qc.QueryContext(context.Background(), stmt, []driver.NamedValue{{Ordinal: 1, Value: lo}, {Ordinal: 2, Value: hi}})
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			if err := rs.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			rows++
			for i := range iv {
				v, null := sqlitefile.DriverInt(dest[i])
				iv[i] = sql.NullInt64{Int64: v, Valid: null == sqlitefile.IsValue}
				if null == sqlitefile.NotInt {
					q.notInt(i)
				}
			}
			for i := range sv {
				sv[i] = toStr(dest[len(iv)+i])
			}
			if err := q.add(b, iv, sv, s, emit); err != nil {
				return err
			}
		}
	})
	return rows, err
}

func toStr(v driver.Value) sql.NullString {
	s, ok := sqlitefile.DriverText(v)
	return sql.NullString{String: s, Valid: ok}
}
