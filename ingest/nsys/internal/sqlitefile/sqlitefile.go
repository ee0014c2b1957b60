// Package sqlitefile reads columns of rowid tables straight from
// an SQLite database file's pages (https://www.sqlite.org/fileformat2.html),
// without the SQLite library.
//
// It exists for speed: nsys exports hold tens of millions of activity rows,
// and stepping them through SQLite's virtual machine and C API costs several
// times what decoding the records does. It is read-only and deliberately
// narrow: rowid tables of a rollback-journal database (not WAL) in UTF-8,
// read by root page in key order. Metadata (root pages, column order) comes
// from SQLite itself; callers keep SQLite as the reference path and for
// everything else.
//
// Every page and record is bounds-checked: a damaged file gives an error
// wrapping ErrCorrupt, never a panic or an endless walk.
package sqlitefile

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

var (
	// ErrCorrupt reports a page or record that breaks the file format.
	ErrCorrupt = errors.New("database disk image is malformed")
	// ErrUnsupported reports a valid file this package does not read
	// (WAL mode, a non-UTF-8 encoding); use SQLite instead.
	ErrUnsupported = errors.New("unsupported database file")
)

const headerSize = 100

// A File is an SQLite database file opened for page reads. Its methods may
// be called from several goroutines; each Cursor belongs to one.
type File struct {
	f        *os.File
	pageSize int
	usable   int       // page size less the reserved bytes at each page's end
	nPages   uint32    // pages in the file
	windows  sync.Pool // read windows of finished cursors, for reuse

	boundMu sync.Mutex
	bounds  leafBounds // key range of each leaf, from its parents (Leaves)
}

// Open opens the database file at path read-only and checks its header.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	file, err := newFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return file, nil
}

func newFile(f *os.File) (*File, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return nil, fmt.Errorf("%w: reading header: %v", ErrCorrupt, err)
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return nil, fmt.Errorf("%w: not an SQLite 3 file", ErrCorrupt)
	}
	ps := int(binary.BigEndian.Uint16(h[16:]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("%w: page size %d", ErrCorrupt, ps)
	}
	if h[18] != 1 || h[19] != 1 {
		// 2 is WAL: the newest pages may live in the -wal file.
		return nil, fmt.Errorf("%w: file format versions %d/%d (WAL mode)", ErrUnsupported, h[18], h[19])
	}
	if enc := binary.BigEndian.Uint32(h[56:]); enc != 1 && enc != 0 {
		return nil, fmt.Errorf("%w: text encoding %d is not UTF-8", ErrUnsupported, enc)
	}
	usable := ps - int(h[20])
	if usable < 480 {
		return nil, fmt.Errorf("%w: %d usable bytes per page", ErrCorrupt, usable)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := st.Size() / int64(ps)
	// The header's page count, as SQLite takes it: valid when non-zero
	// and the change counter equals the version-valid-for number (a
	// legacy writer leaves them apart); then pages past it are not part
	// of the database, and a count past the file's end is damage.
	if hn := int64(binary.BigEndian.Uint32(h[28:])); hn != 0 && string(h[24:28]) == string(h[92:96]) {
		if hn > n {
			return nil, fmt.Errorf("%w: the header counts %d pages, the file holds %d", ErrCorrupt, hn, n)
		}
		n = hn
	}
	if n > math.MaxUint32 {
		n = math.MaxUint32
	}
	return &File{f: f, pageSize: ps, usable: usable, nPages: uint32(n)}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// PageSize returns the database page size in bytes.
func (f *File) PageSize() int { return f.pageSize }

// readPage reads page p (1-based) into buf, which holds a page.
func (f *File) readPage(p uint32, buf []byte) error {
	if p < 1 || p > f.nPages {
		return fmt.Errorf("%w: page %d outside the file's %d pages", ErrCorrupt, p, f.nPages)
	}
	_, err := f.f.ReadAt(buf[:f.pageSize], int64(p-1)*int64(f.pageSize))
	if err != nil {
		return fmt.Errorf("reading page %d: %w", p, err)
	}
	return nil
}

// Page types (the first byte of a b-tree page header).
const (
	interiorTable = 0x05
	leafTable     = 0x0d
)

// missing marks a column a short record does not hold.
const missing = math.MaxUint64

// maxDepth bounds b-tree walks; real trees of 2^32 pages are far shallower.
const maxDepth = 40

// Leaves returns the leaf pages of the table b-tree rooted at page root, in
// key (rowid) order. A b-tree is balanced, so it is read a level at a
// time and only interior pages are read: the first child of a level says
// whether the next one is leaves (Cursor checks each leaf's type).
func (f *File) Leaves(root uint32) ([]uint32, error) {
	leaves, _, err := f.leaves(root, 0)
	return leaves, err
}

// MoreLeaves says whether the table b-tree rooted at page root has more
// than n leaf pages. It stops reading once a level has more than n pages
// (a level has at least as many pages as the one above it), so a large
// table costs a few interior pages, not all of them.
func (f *File) MoreLeaves(root uint32, n int) (bool, error) {
	_, more, err := f.leaves(root, n)
	return more, err
}

// leaves is Leaves; with limit > 0 it returns more instead as soon as a
// level has more than limit pages.
func (f *File) leaves(root uint32, limit int) (leaves []uint32, more bool, err error) {
	buf := make([]byte, f.pageSize)
	level := []uint32{root}
	bounds := []bound{full}
	seen := newPageSet(f.nPages)
	seen.add(root)
	var scratch []extent
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return nil, false, fmt.Errorf("%w: b-tree at page %d is deeper than %d", ErrCorrupt, root, maxDepth)
		}
		typ, err := f.pageType(level[0], buf)
		if err != nil {
			return nil, false, err
		}
		switch typ {
		case leafTable:
			f.boundMu.Lock()
			f.bounds = f.bounds.with(level, bounds)
			f.boundMu.Unlock()
			return level, false, nil
		case interiorTable:
		default:
			return nil, false, fmt.Errorf("%w: page %d has type %#x, want a table b-tree page", ErrCorrupt, level[0], typ)
		}
		var next []uint32
		var nextB []bound
		for i, p := range level {
			n0 := len(next)
			if next, nextB, err = f.children(p, buf, bounds[i], next, nextB, &scratch); err != nil {
				return nil, false, err
			}
			for _, c := range next[n0:] {
				if !seen.add(c) {
					return nil, false, fmt.Errorf("%w: b-tree at page %d reaches page %d twice", ErrCorrupt, root, c)
				}
			}
			if seen.n > int(f.nPages) {
				return nil, false, fmt.Errorf("%w: b-tree at page %d has a cycle", ErrCorrupt, root)
			}
			if limit > 0 && len(next) > limit {
				return nil, true, nil
			}
		}
		level, bounds = next, nextB
	}
}

// pageSet is a set of page numbers: a bit per page of the file (a map
// of a large table's 100k pages was a third of Leaves' time), a map for
// numbers past its end (a damaged file's, which reading them reports).
type pageSet struct {
	bits []uint64
	far  map[uint32]bool
	n    int
}

func newPageSet(nPages uint32) pageSet { return pageSet{bits: make([]uint64, nPages/64+1)} }

// add adds p, reporting whether it was new.
func (s *pageSet) add(p uint32) bool {
	if w := int(p / 64); w < len(s.bits) {
		if s.bits[w]>>(p%64)&1 == 1 {
			return false
		}
		s.bits[w] |= 1 << (p % 64)
	} else {
		if s.far[p] {
			return false
		}
		if s.far == nil {
			s.far = map[uint32]bool{}
		}
		s.far[p] = true
	}
	s.n++
	return true
}

// pageType reads page p into buf and returns its b-tree page type.
func (f *File) pageType(p uint32, buf []byte) (byte, error) {
	if err := f.readPage(p, buf); err != nil {
		return 0, err
	}
	if p == 1 {
		return buf[headerSize], nil
	}
	return buf[0], nil
}

// children appends the child pages of interior table page p, whose keys
// lie in b, to dst, and their key ranges to dstB: the page's keys must
// ascend within b.
func (f *File) children(p uint32, buf []byte, b bound, dst []uint32, dstB []bound, scratch *[]extent) ([]uint32, []bound, error) {
	typ, err := f.pageType(p, buf)
	if err != nil {
		return dst, dstB, err
	}
	if typ != interiorTable {
		return dst, dstB, fmt.Errorf("%w: page %d has type %#x among interior pages", ErrCorrupt, p, typ)
	}
	off := 0
	if p == 1 {
		off = headerSize
	}
	pg := buf[:f.usable]
	n, ptrs, err := checkPage(pg, off, p, true, scratch)
	if err != nil {
		return dst, dstB, err
	}
	if n == 0 && (b.child || p != 1) {
		// SQLite's moveToRoot and moveToChild: only page 1 may be an
		// interior page with no cells, and only as the root.
		return dst, dstB, fmt.Errorf("%w: interior page %d has no cells", ErrCorrupt, p)
	}
	lo := b.lo
	for i := 0; i < n; i++ {
		c := int(binary.BigEndian.Uint16(pg[ptrs+2*i:]))
		key, _ := uvarint(pg[c+4:])
		k := int64(key)
		if k <= lo || k > b.hi {
			return dst, dstB, fmt.Errorf("%w: page %d: key %d of cell %d out of order (after %d, at most %d)", ErrCorrupt, p, k, i, lo, b.hi)
		}
		dst = append(dst, binary.BigEndian.Uint32(pg[c:]))
		dstB = append(dstB, bound{lo, k, true})
		lo = k
	}
	dst = append(dst, binary.BigEndian.Uint32(pg[off+8:]))
	dstB = append(dstB, bound{lo, b.hi, true})
	return dst, dstB, nil
}

// Column selects one output of a Cursor.
type Column struct {
	// Index is the column's position in the table's records; RowID reads
	// the rowid (an INTEGER PRIMARY KEY column) and Null always gives NULL.
	Index int
	// Default is the value of a column that a record is too short to
	// hold (added by ALTER TABLE); DefaultNull makes it NULL.
	Default     int64
	DefaultNull bool
	// Text reads the column as text (ReadText's texts), as SQLite's
	// driver for Go gives it: TEXT and BLOB bytes as they are, integers
	// in decimal, reals as strconv's shortest 'g' form. Its vals entry is 0.
	Text bool
	// IntOnly reads only integers and reals (converted as
	// sqlite3_column_int64 does): a TEXT or BLOB value gives NULL with
	// nulls NotInt, for the caller to warn about. Without it text converts
	// as sqlite3_column_int64 does (its leading integer, else 0).
	IntOnly bool
}

// Values of a Read's nulls entries.
const (
	IsValue = 0 // an integer (vals holds it)
	IsNull  = 1 // NULL, or a column a short record lacks with DefaultNull
	NotInt  = 2 // a TEXT or BLOB value in an IntOnly column: read as NULL
)

// DriverInt converts a value from SQLite's driver for Go (go-sqlite3) to
// what a Cursor's IntOnly column gives for the same stored value: integers
// as they are, reals as sqlite3_column_int64 converts them (toward zero,
// saturating), NULL as IsNull, and text, blobs and anything else (a
// time.Time from a column declared as a date) as NotInt. ingest/nsys reads
// its driver path through it, so that both readers give the same figures.
func DriverInt(v any) (int64, uint8) {
	switch x := v.(type) {
	case nil:
		return 0, IsNull
	case int64:
		return x, IsValue
	case float64:
		if x != x {
			return 0, IsNull // SQLite reads a stored NaN as NULL
		}
		return floatToInt(x), IsValue
	case bool: // a column declared BOOLEAN
		if x {
			return 1, IsValue
		}
		return 0, IsValue
	}
	return 0, NotInt
}

// ColumnDefault sets col's default from a column's declared type and
// dflt_value (from pragma_table_xinfo), and reports whether the page
// reader gives what SQLite gives for a record too short to hold the
// column: only NULL and a bare integer literal (optionally signed or in
// parentheses) in a column whose affinity keeps it an integer. A quoted,
// real or other default, or an integer in a TEXT-affinity column (which
// SQLite gives as text), is SQLite's to read: false.
func ColumnDefault(col *Column, typ string, dflt sql.NullString) bool {
	if !dflt.Valid || strings.EqualFold(strings.TrimSpace(dflt.String), "NULL") {
		col.Default, col.DefaultNull = 0, true
		return true
	}
	if textAffinity(typ) {
		return false
	}
	lit := strings.TrimSpace(dflt.String)
	for len(lit) >= 2 && lit[0] == '(' && lit[len(lit)-1] == ')' {
		lit = strings.TrimSpace(lit[1 : len(lit)-1])
	}
	digits := strings.TrimLeft(lit, "+-")
	if len(lit)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(lit, "+"), 10, 64)
	if err != nil {
		return false
	}
	col.Default, col.DefaultNull = v, false
	return true
}

// textAffinity reports whether a declared type has TEXT affinity
// (https://www.sqlite.org/datatype3.html, 3.1).
func textAffinity(typ string) bool {
	t := strings.ToUpper(typ)
	return !strings.Contains(t, "INT") && (strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") || strings.Contains(t, "TEXT"))
}

// DriverText converts a value from SQLite's driver for Go to what a
// Cursor's Text column gives for the same stored value (false: NULL).
func DriverText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case []byte:
		return string(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return fmt.Sprint(v), true
}

// Special Column indexes.
const (
	RowID = -1
	Null  = -2
)

// window is how many consecutive pages a Cursor reads with one system call.
const window = 64

// A Cursor decodes the rows of a list of leaf pages, in order.
type Cursor struct {
	f       *File
	leaves  []uint32
	cols    []Column
	maxIdx  int // largest record index read
	notInts int // NotInt values read (NotInts)

	win     []byte // pages winLo..winLo+winN-1
	winLo   uint32
	winN    uint32
	page    []byte // the current leaf
	pageNo  uint32
	cell    int // next cell of the current leaf
	nCells  int
	ptrs    int
	ovfl    []byte // scratch for records that spill to overflow pages
	ovflBuf []byte
	hasText bool
	views   bool              // texts are views of the cursor's buffers (SetViews)
	spilled bool              // the current record is in ovfl, not on its page
	strs    map[string]string // intern's cache
	types   []uint64          // serial types of the current record's columns
	offs    []int             // their offsets in the record body
	scratch []extent          // checkPage's
	bound   bound             // the current leaf's key range
	last    int64             // the last rowid read on this leaf
	started bool              // last is set
	maxCols int               // columns a record may have (SetColumns); 0: any
	// The one-pass decode (ints): slots[i] is the position in a row of
	// record column i (-1: not read), fixed the positions of RowID and
	// Null columns; slots is nil for a cursor that reads text or one
	// column twice, which decodes through header and columns.
	slots    []int32
	fixed    []int32
	plans    *[planSlots]plan // ints' plans by a hash of their header
	lastPlan *plan            // the plan of the last record ints read
}

// planSlots is how many plans a cursor keeps, by a hash of the header: a
// table's records have few distinct headers (10 to 50 in the synth
// traces' API, kernel and memcpy tables, 1 to 32 in real exports').
const planSlots = 256

// A plan is where the columns a cursor reads are in a record of a given
// header (parse): the header's bytes, the body's size, each column read
// and how many of the record's columns the cursor reads.
type plan struct {
	hdr   []byte
	body  int
	cells []colAt
	cols  int
}

// SetColumns makes a record of more than n columns an ErrCorrupt: a
// table's records never hold more columns than it declares (fewer, after
// ALTER TABLE ADD COLUMN), and a page of another table in place of one of
// this table's usually has another count.
func (c *Cursor) SetColumns(n int) { c.maxCols = n }

// Bound returns the key range the parents of leaf p (from Leaves) allow:
// lo < rowid <= hi; lo is math.MinInt64 when nothing bounds it below.
func (f *File) Bound(p uint32) (lo, hi int64) {
	f.boundMu.Lock()
	defer f.boundMu.Unlock()
	b, ok := f.bounds.get(p)
	if !ok {
		return math.MinInt64, math.MaxInt64
	}
	return b.lo, b.hi
}

// Forget drops the bounds Leaves kept for leaves, once no cursor reads
// them: a large table's are megabytes (20 bytes a leaf), held through the
// rest of the read otherwise. A cursor given a leaf list without bounds
// checks its pages against none (as for a list that did not come from
// Leaves); a page in two trees of a damaged file loses its bound for both.
func (f *File) Forget(leaves []uint32) {
	f.boundMu.Lock()
	defer f.boundMu.Unlock()
	f.bounds = f.bounds.without(leaves)
}

// NewCursor returns a cursor over leaves (from Leaves, or a sub-slice of
// it) that reads cols of each row.
func (f *File) NewCursor(leaves []uint32, cols []Column) *Cursor {
	c := &Cursor{f: f, leaves: leaves, cols: slices.Clone(cols), maxIdx: -1}
	for i, col := range c.cols {
		if col.Index < Null {
			c.cols[i].Index = Null // not a column: read as NULL
		}
		c.maxIdx = max(c.maxIdx, col.Index)
		if col.Text {
			c.hasText = true
			c.strs = map[string]string{}
		}
	}
	c.types = make([]uint64, c.maxIdx+1)
	c.offs = make([]int, c.maxIdx+1)
	c.planSlots()
	return c
}

// planSlots sets slots and fixed where the cursor can decode in one pass.
func (c *Cursor) planSlots() {
	if c.hasText {
		return
	}
	slots := make([]int32, c.maxIdx+1)
	for i := range slots {
		slots[i] = -1
	}
	var fixed []int32
	for j, col := range c.cols {
		if col.Index < 0 {
			fixed = append(fixed, int32(j))
			continue
		}
		if slots[col.Index] >= 0 {
			return
		}
		slots[col.Index] = int32(j)
	}
	c.slots, c.fixed = slots, fixed
}

// SetViews makes ReadText give text values as views of the cursor's read
// buffers instead of copies: they are valid only until the next ReadText
// call, which then returns early (fewer rows than there is room for)
// rather than overwrite the buffers the views point into. For tables of
// distinct strings (StringIds) that the caller copies once anyway.
func (c *Cursor) SetViews() { c.views = true }

// Read decodes up to len(vals)/len(cols) rows into vals and nulls, row
// after row, each row len(cols) entries: nulls[i] is 1 where the value is
// NULL (vals[i] is then 0), NotInt where an IntOnly column holds text or a
// blob (also read as NULL). Values convert to integers as SQLite's
// sqlite3_column_int64 does (a stored NaN, which SQLite reads as NULL, is
// NULL). Read returns the rows decoded and io.EOF after the last one.
func (c *Cursor) Read(vals []int64, nulls []uint8) (int, error) {
	return c.ReadText(vals, nulls, nil)
}

// ReadText is Read for cursors with Text columns: texts, as long as vals,
// receives each text column's value at its position in the row.
func (c *Cursor) ReadText(vals []int64, nulls []uint8, texts []string) (int, error) {
	return c.read(vals, nil, nulls, texts, len(vals))
}

// ReadNullable is ReadText into rows of sql.NullInt64 (Valid where nulls
// is IsValue), the form the row fillers take: decoded there, not copied
// there from vals row by row. NotInts counts the NotInt values read.
func (c *Cursor) ReadNullable(rows []sql.NullInt64, nulls []uint8, texts []string) (int, error) {
	return c.read(nil, rows, nulls, texts, len(rows))
}

// NotInts is how many NotInt values the cursor has read so far.
func (c *Cursor) NotInts() int { return c.notInts }

// read is ReadText into vals, or ReadNullable into rows (vals nil); room
// is the length of the one given.
func (c *Cursor) read(vals []int64, rows []sql.NullInt64, nulls []uint8, texts []string, room int) (int, error) {
	nc := len(c.cols)
	if nc == 0 {
		return 0, errors.New("sqlitefile: cursor reads no columns")
	}
	if c.hasText && len(texts) < room {
		return 0, errors.New("sqlitefile: the cursor reads text columns: use ReadText with room for them")
	}
	max := min(room, len(nulls)) / nc
	if max == 0 {
		return 0, errors.New("sqlitefile: Read needs room for a row")
	}
	n := 0
	for n < max {
		if c.cell >= c.nCells {
			if len(c.leaves) == 0 {
				if n == 0 {
					c.release()
					return 0, io.EOF
				}
				return n, nil
			}
			if p := c.leaves[0]; c.views && n > 0 && (p < c.winLo || p >= c.winLo+c.winN) {
				return n, nil // loading p would overwrite the rows' views
			}
			if err := c.load(c.leaves[0]); err != nil {
				return n, err
			}
			c.leaves = c.leaves[1:]
			continue
		}
		var tx []string
		if c.hasText {
			tx = texts[n*nc : n*nc+nc]
		}
		var err error
		if rows != nil {
			err = c.decode(nil, rows[n*nc:n*nc+nc], nulls[n*nc:n*nc+nc], tx)
		} else {
			err = c.decode(vals[n*nc:n*nc+nc], nil, nulls[n*nc:n*nc+nc], tx)
		}
		if err != nil {
			return n, fmt.Errorf("page %d cell %d: %w", c.pageNo, c.cell, err)
		}
		c.cell++
		n++
	}
	return n, nil
}

// Close gives the cursor's buffers back before its end (Read returns
// io.EOF then).
func (c *Cursor) Close() {
	c.release()
	c.leaves, c.cell, c.nCells = nil, 0, 0
}

// release gives the cursor's read window back to the file at the end.
func (c *Cursor) release() {
	if c.win != nil {
		w := c.win
		c.f.windows.Put(&w)
		c.win, c.page, c.winN = nil, nil, 0
	}
}

// load makes leaf page p current, reading a window of pages from p on
// when p is not in the current one (leaves are mostly consecutive).
func (c *Cursor) load(p uint32) error {
	f := c.f
	if p < c.winLo || p >= c.winLo+c.winN {
		if p < 1 || p > f.nPages {
			return fmt.Errorf("%w: page %d outside the file's %d pages", ErrCorrupt, p, f.nPages)
		}
		n := min(uint32(window), f.nPages-p+1)
		if len(c.leaves) == 1 {
			n = 1 // the last leaf (a point lookup reads one page)
		}
		if c.win == nil {
			// Windows are reused across cursors: a fresh buffer costs a
			// page fault per 4 kB on first use, more than the read.
			if w, ok := f.windows.Get().(*[]byte); ok {
				c.win = *w
			} else {
				c.win = make([]byte, window*f.pageSize)
			}
		}
		if _, err := f.f.ReadAt(c.win[:int(n)*f.pageSize], int64(p-1)*int64(f.pageSize)); err != nil {
			return fmt.Errorf("reading page %d: %w", p, err)
		}
		c.winLo, c.winN = p, n
	}
	i := int(p-c.winLo) * f.pageSize
	pg := c.win[i : i+f.pageSize]
	off := 0
	if p == 1 {
		off = headerSize
	}
	if pg[off] != leafTable {
		return fmt.Errorf("%w: page %d has type %#x, want a table leaf", ErrCorrupt, p, pg[off])
	}
	n, ptrs, err := checkPage(pg[:f.usable], off, p, false, &c.scratch)
	if err != nil {
		return err
	}
	f.boundMu.Lock()
	b, ok := f.bounds.get(p)
	f.boundMu.Unlock()
	if !ok {
		b = full // a leaf list that did not come from Leaves
	}
	if n == 0 && b.child {
		return fmt.Errorf("%w: leaf page %d below the root has no cells", ErrCorrupt, p)
	}
	c.page, c.pageNo, c.cell, c.nCells, c.ptrs, c.bound, c.started = pg[:f.usable], p, 0, n, ptrs, b, false
	return nil
}

// decode reads the current cell's row into vals (or rows, when vals is
// nil) and nulls.
func (c *Cursor) decode(vals []int64, rows []sql.NullInt64, nulls []uint8, texts []string) error {
	rec, rowid, err := c.record()
	if err != nil {
		return err
	}
	if c.slots != nil && rows != nil {
		return c.ints(rec, rowid, rows, nulls)
	}
	body, err := c.header(rec)
	if err != nil {
		return err
	}
	c.columns(rowid, body, vals, rows, nulls, texts)
	return nil
}

// record returns the current cell's record (its payload, gathered from
// overflow pages where it spills) and rowid, checking the rowid's order.
func (c *Cursor) record() (rec []byte, rowid uint64, err error) {
	pg := c.page
	at := int(binary.BigEndian.Uint16(pg[c.ptrs+2*c.cell:]))
	if at < c.ptrs+2*c.nCells || at >= len(pg) {
		return nil, 0, fmt.Errorf("%w: cell offset %d", ErrCorrupt, at)
	}
	cell := pg[at:]
	size, k := uvarint(cell)
	if k == 0 {
		return nil, 0, fmt.Errorf("%w: payload size", ErrCorrupt)
	}
	rowid, k2 := uvarint(cell[k:])
	if k2 == 0 {
		return nil, 0, fmt.Errorf("%w: rowid", ErrCorrupt)
	}
	// Keys ascend within a leaf and stay in its range from its parents
	// (so they ascend across leaves too). No key is below MinInt64.
	if r := int64(rowid); (r <= c.bound.lo && c.bound.lo != math.MinInt64) || r > c.bound.hi || (c.started && r <= c.last) {
		return nil, 0, fmt.Errorf("%w: rowid %d out of order (after %d, leaf range %d..%d)", ErrCorrupt, r, c.last, c.bound.lo, c.bound.hi)
	}
	c.last, c.started = int64(rowid), true
	cell = cell[k+k2:]
	// The payload stays on the page up to X bytes; beyond that a prefix of
	// it does and the rest is on a chain of overflow pages.
	u := uint64(c.f.usable)
	c.spilled = false
	if x := u - 35; size <= x {
		if size > uint64(len(cell)) {
			return nil, 0, fmt.Errorf("%w: %d-byte payload overflows the page", ErrCorrupt, size)
		}
		rec = cell[:size]
	} else {
		if rec, err = c.spill(cell, size); err != nil {
			return nil, 0, err
		}
		c.spilled = true
	}
	return rec, rowid, nil
}

// header reads record rec's header into the cursor's serial types and
// body offsets (of the columns up to the last one read) and returns the
// record's body.
func (c *Cursor) header(rec []byte) (body []byte, err error) {
	hdr, k := uvarint(rec)
	if k == 0 || hdr > uint64(len(rec)) || hdr < uint64(k) {
		return nil, fmt.Errorf("%w: record header size %d", ErrCorrupt, hdr)
	}
	// Serial types and body offsets of the columns up to the last one
	// read; a short record marks the rest missing (use the default).
	types, offs := c.types, c.offs
	h := rec[k:hdr]
	body = rec[hdr:]
	n, off := 0, 0
	for ; n < len(types) && len(h) > 0; n++ {
		// Serial types below 128 (every number, NULL, and text or blobs
		// of up to 57 bytes) are one byte: read without the varint loop.
		t, k, sz := uint64(h[0]), 1, 0
		if t < 0x80 {
			sz = int(smallSize[t])
		} else {
			if t, k = uvarint(h); k == 0 {
				return nil, fmt.Errorf("%w: record header", ErrCorrupt)
			}
			sz = contentSize(t)
		}
		if sz < 0 || off+sz > len(body) {
			return nil, fmt.Errorf("%w: column %d (serial type %d) overflows the record", ErrCorrupt, n, t)
		}
		types[n], offs[n] = t, off
		off += sz
		h = h[k:]
	}
	for i := n; i < len(types); i++ {
		types[i] = missing
	}
	if err := c.rest(h, n, off, len(body)); err != nil {
		return nil, err
	}
	return body, nil
}

// rest reads the header h of a record's columns from column n on, past
// the last one read, whose body starts at off, and checks that the
// columns fill the body (size bytes) exactly, as SQLite does once it has
// read a whole record header.
func (c *Cursor) rest(h []byte, n, off, size int) error {
	if c.maxCols == 0 || n+len(h) <= c.maxCols {
		// Every column takes a header byte at least, so none can be
		// past the table's: the one-byte types in a plain loop.
		i := 0
		for i < len(h) && h[i] < 0x80 {
			sz := smallSize[h[i]&0x7f]
			if sz < 0 {
				return fmt.Errorf("%w: serial type %d", ErrCorrupt, h[i])
			}
			off += int(sz)
			i++
		}
		n, h = n+i, h[i:]
	}
	for cols := n; len(h) > 0; cols++ {
		if c.maxCols > 0 && cols >= c.maxCols {
			return fmt.Errorf("%w: a record of more than %d columns, the table's", ErrCorrupt, c.maxCols)
		}
		if t := h[0]; t < 0x80 {
			if smallSize[t] < 0 {
				return fmt.Errorf("%w: serial type %d", ErrCorrupt, t)
			}
			off += int(smallSize[t])
			h = h[1:]
			continue
		}
		t, k := uvarint(h)
		if k == 0 {
			return fmt.Errorf("%w: record header", ErrCorrupt)
		}
		sz := contentSize(t)
		if sz < 0 {
			return fmt.Errorf("%w: serial type %d", ErrCorrupt, t)
		}
		off += sz
		h = h[k:]
	}
	if off != size {
		return fmt.Errorf("%w: record columns take %d bytes of a %d-byte body", ErrCorrupt, off, size)
	}
	return nil
}

// ints is header and columns for a cursor with slots, into rows and
// nulls (ReadNullable's). The header of record rec (rowid) is read into a
// plan: the serial type and body offset of each column read. A table's
// records have few distinct headers (the same serial types: integers of
// the same sizes), so the plan of an earlier record with the same header
// bytes and body size mostly holds, checks included, and only the columns
// read are decoded.
func (c *Cursor) ints(rec []byte, rowid uint64, rows []sql.NullInt64, nulls []uint8) error {
	hdr, k := uvarint(rec)
	if k == 0 || hdr > uint64(len(rec)) || hdr < uint64(k) {
		return fmt.Errorf("%w: record header size %d", ErrCorrupt, hdr)
	}
	body := rec[hdr:]
	pl := c.lastPlan // most records have the header of the one before
	if pl == nil || len(body) != pl.body || !bytes.Equal(rec[:hdr], pl.hdr) {
		if c.plans == nil {
			c.plans = new([planSlots]plan)
		}
		// Two slots a header: two frequent headers of one hash
		// would take turns parsing.
		h := hashHeader(rec[:hdr]) % planSlots
		pl = &c.plans[h]
		if alt := &c.plans[h^1]; len(body) != pl.body || !bytes.Equal(rec[:hdr], pl.hdr) {
			pl = alt
		}
		if len(body) != pl.body || !bytes.Equal(rec[:hdr], pl.hdr) {
			if len(pl.hdr) > 0 {
				pl = &c.plans[h] // both taken: the first slot's goes
			}
			pl.hdr = pl.hdr[:0] // no plan while parse fails
			if err := c.parse(pl, rec[k:hdr], body); err != nil {
				return err
			}
			pl.hdr, pl.body = append(pl.hdr, rec[:hdr]...), len(body)
		}
		c.lastPlan = pl
	}
	cols := c.cols
	for _, p := range pl.cells {
		var v int64
		null := uint8(IsValue)
		switch t, off := p.t, int(p.off); {
		case t-1 < 6: // the integers: most values
			if e := off + 8; e <= cap(body) {
				// The value's bytes, big-endian and signed, as the top
				// of the 8 from where it starts (the rest are the
				// record's or the page's next bytes).
				v = int64(binary.BigEndian.Uint64(body[off:e])) >> (64 - 8*uint(smallSize[t]))
			} else {
				v = intValue(t, body[off:])
			}
		case t == 8: // 0 and 1 take no body bytes
		case t == 9:
			v = 1
		case t == 0:
			null = IsNull
		case t >= 12 && cols[p.j].IntOnly:
			null = NotInt
			c.notInts++
		default:
			var isNull bool
			if v, isNull = value(t, body[off:off+serialSize(t)]); isNull {
				null = IsNull
			}
		}
		rows[p.j] = sql.NullInt64{Int64: v, Valid: null == IsValue}
		nulls[p.j] = null
	}
	// A short record's missing columns take their defaults.
	for _, j := range c.slots[pl.cols:] {
		if j >= 0 {
			set(j, cols[j].Default, cols[j].DefaultNull, rows, nulls)
		}
	}
	for _, j := range c.fixed {
		set(j, int64(rowid), cols[j].Index == Null, rows, nulls)
	}
	return nil
}

// A colAt is where a column read is in a record of a plan's header: its
// position in the row (j), serial type and body offset. (A cell, in
// SQLite's words, is a record's place on its page.)
type colAt struct {
	t   uint64
	off int32
	j   int32
}

// hashHeader hashes a record header's bytes, 8 at a time; its low bits
// are as mixed as its high ones.
func hashHeader(h []byte) uint64 {
	const m = 0x9e3779b97f4a7c15
	x := uint64(len(h))
	if len(h) < 8 {
		for _, b := range h {
			x = (x ^ uint64(b)) * m
		}
	} else {
		// Whole words, then the last 8 bytes (overlapping the last
		// word where the length is not a multiple of 8).
		for i := 0; i+8 < len(h); i += 8 {
			x = (x ^ binary.LittleEndian.Uint64(h[i:])) * m
			x ^= x >> 32
		}
		x = (x ^ binary.LittleEndian.Uint64(h[len(h)-8:])) * m
	}
	return x ^ x>>29 ^ x>>47
}

// parse reads header h of a record with body into pl, checking it as
// header does.
func (c *Cursor) parse(pl *plan, h, body []byte) error {
	if len(body) > math.MaxInt32 { // SQLite's limit: the plan's offsets are int32
		return fmt.Errorf("%w: a %d-byte record", ErrCorrupt, len(body))
	}
	slots := c.slots
	cells := pl.cells[:0]
	n, off, i := 0, 0, 0
	for ; n < len(slots) && i < len(h); n++ {
		t, sz := uint64(h[i]), 0
		if t < 0x80 {
			sz = int(smallSize[t&0x7f])
			i++
		} else {
			var k int
			if t, k = uvarint(h[i:]); k == 0 {
				return fmt.Errorf("%w: record header", ErrCorrupt)
			}
			sz = contentSize(t)
			i += k
		}
		if sz < 0 || off+sz > len(body) {
			return fmt.Errorf("%w: column %d (serial type %d) overflows the record", ErrCorrupt, n, t)
		}
		if j := slots[n]; j >= 0 {
			cells = append(cells, colAt{t: t, off: int32(off), j: j})
		}
		off += sz
	}
	pl.cells, pl.cols = cells, n
	return c.rest(h[i:], n, off, len(body))
}

// set writes value v, or NULL, to position j of a row.
func set(j int32, v int64, null bool, rows []sql.NullInt64, nulls []uint8) {
	if null {
		v = 0
	}
	rows[j] = sql.NullInt64{Int64: v, Valid: !null}
	nulls[j] = IsValue
	if null {
		nulls[j] = IsNull
	}
}

// columns fills the cursor's columns of the current row (rowid, record
// body) into vals (or rows, when vals is nil), nulls and texts.
func (c *Cursor) columns(rowid uint64, body []byte, vals []int64, rows []sql.NullInt64, nulls []uint8, texts []string) {
	types, offs := c.types, c.offs
	nulls = nulls[:len(c.cols)]
	if rows != nil {
		rows = rows[:len(c.cols)]
	} else {
		vals = vals[:len(c.cols)]
	}
	for j := range c.cols {
		col := &c.cols[j]
		if col.Text {
			if rows != nil {
				rows[j] = sql.NullInt64{}
			} else {
				vals[j] = 0
			}
			nulls[j] = 0
			c.text(j, *col, types, offs, body, rowid, nulls, texts)
			continue
		}
		var v int64
		var null uint8
		switch col.Index {
		case RowID:
			v = int64(rowid)
		case Null:
			null = IsNull
		default:
			switch t := types[col.Index]; {
			case t-1 < 6: // the integers: most values
				v = intValue(t, body[offs[col.Index]:])
			case t == missing:
				if col.DefaultNull {
					null = IsNull
				} else {
					v = col.Default
				}
			case t >= 12 && col.IntOnly:
				null = NotInt
				c.notInts++
			default:
				o := offs[col.Index]
				var isNull bool
				if v, isNull = value(t, body[o:o+serialSize(t)]); isNull {
					null = IsNull
				}
			}
		}
		if rows != nil {
			rows[j] = sql.NullInt64{Int64: v, Valid: null == IsValue}
		} else {
			vals[j] = v
		}
		nulls[j] = null
	}
}

// text decodes text column j of the current record into texts[j].
func (c *Cursor) text(j int, col Column, types []uint64, offs []int, body []byte, rowid uint64, nulls []uint8, texts []string) {
	texts[j] = ""
	switch col.Index {
	case RowID:
		texts[j] = strconv.FormatInt(int64(rowid), 10)
		return
	case Null:
		nulls[j] = 1
		return
	}
	t := types[col.Index]
	switch {
	case t == missing:
		if col.DefaultNull {
			nulls[j] = 1
		} else {
			texts[j] = strconv.FormatInt(col.Default, 10)
		}
	case t == 0:
		nulls[j] = 1
	case t >= 12:
		b := body[offs[col.Index] : offs[col.Index]+contentSize(t)]
		switch {
		case c.views && len(b) > 0 && !c.spilled:
			texts[j] = unsafe.String(&b[0], len(b))
		case c.views:
			texts[j] = string(b) // the overflow scratch is reused per record
		default:
			texts[j] = c.intern(b)
		}
	case t == 7:
		r := math.Float64frombits(binary.BigEndian.Uint64(body[offs[col.Index]:]))
		if r != r {
			nulls[j] = 1 // SQLite reads a stored NaN as NULL
			return
		}
		texts[j] = strconv.FormatFloat(r, 'g', -1, 64)
	default:
		v, _ := value(t, body[offs[col.Index]:offs[col.Index]+contentSize(t)])
		texts[j] = strconv.FormatInt(v, 10)
	}
}

// intern returns b as a string, sharing one copy of each recent value
// (text columns such as NVTX range names repeat).
func (c *Cursor) intern(b []byte) string {
	if s, ok := c.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.strs) >= 4096 {
		clear(c.strs)
	}
	c.strs[s] = s
	return s
}

// spill assembles a payload of size bytes that starts in cell and continues
// on overflow pages.
func (c *Cursor) spill(cell []byte, size uint64) ([]byte, error) {
	u := uint64(c.f.usable)
	if size > math.MaxInt32 || size > uint64(c.f.nPages)*u {
		// SQLite's own row limit is 2^31-1 bytes; a larger size is damage
		// (and would be allocated before the chain is followed).
		return nil, fmt.Errorf("%w: %d-byte payload is larger than the file", ErrCorrupt, size)
	}
	m := (u-12)*32/255 - 23
	local := m + (size-m)%(u-4)
	if local > u-35 {
		local = m
	}
	if local+4 > uint64(len(cell)) {
		return nil, fmt.Errorf("%w: overflowing payload leaves the page", ErrCorrupt)
	}
	if uint64(cap(c.ovfl)) < size {
		c.ovfl = make([]byte, 0, size)
	}
	rec := append(c.ovfl[:0], cell[:local]...)
	next := binary.BigEndian.Uint32(cell[local:])
	if c.ovflBuf == nil {
		c.ovflBuf = make([]byte, c.f.pageSize)
	}
	for hops := 0; uint64(len(rec)) < size; hops++ {
		if next == 0 || hops > int(c.f.nPages) {
			return nil, fmt.Errorf("%w: overflow chain ends early", ErrCorrupt)
		}
		if err := c.f.readPage(next, c.ovflBuf); err != nil {
			return nil, err
		}
		next = binary.BigEndian.Uint32(c.ovflBuf)
		take := min(size-uint64(len(rec)), u-4)
		rec = append(rec, c.ovflBuf[4:4+take]...)
	}
	if next != 0 {
		return nil, fmt.Errorf("%w: overflow chain longer than its %d-byte payload", ErrCorrupt, size)
	}
	c.ovfl = rec
	return rec, nil
}

// smallSize is contentSize of the serial types below 128.
var smallSize = func() (tab [128]int8) {
	for t := range tab {
		tab[t] = int8(contentSize(uint64(t)))
	}
	return tab
}()

// serialSize is contentSize through smallSize where it can.
func serialSize(t uint64) int {
	if t < 128 {
		return int(smallSize[t])
	}
	return contentSize(t)
}

// contentSize is the body size of a value of serial type t (-1 for the
// reserved types 10 and 11, which callers reject).
func contentSize(t uint64) int {
	switch {
	case t <= 4:
		return int(t)
	case t == 5:
		return 6
	case t == 6 || t == 7:
		return 8
	case t <= 9:
		return 0
	case t < 12:
		return -1
	case t > 1<<40:
		return -1
	}
	return int((t - 12) / 2)
}

// value converts a value of serial type t with body b to an integer as
// sqlite3_column_int64 does, and reports whether it is NULL.
func value(t uint64, b []byte) (int64, bool) {
	switch t {
	case 0:
		return 0, true
	case 1, 2, 3, 4, 5, 6:
		return intValue(t, b), false
	case 7:
		r := math.Float64frombits(binary.BigEndian.Uint64(b))
		if r != r {
			return 0, true // SQLite reads a stored NaN as NULL
		}
		return floatToInt(r), false
	case 8:
		return 0, false
	case 9:
		return 1, false
	}
	return atoi(b), false // text or blob
}

// intValue is value for the integer serial types 1 to 6, whose body b
// starts with (the header check made sure it is there).
func intValue(t uint64, b []byte) int64 {
	switch t {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b)))
	case 3:
		_ = b[2]
		return int64(int32(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8)) >> 8
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b)))
	case 5:
		_ = b[5]
		v := uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5])
		return int64(v<<16) >> 16
	}
	return int64(binary.BigEndian.Uint64(b))
}

// floatToInt is SQLite's doubleToInt64: NaN is 0, out-of-range saturates.
func floatToInt(r float64) int64 {
	switch {
	case r != r:
		return 0
	case r <= math.MinInt64:
		return math.MinInt64
	case r >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(r)
}

// atoi is the integer prefix of text, as sqlite3_column_int64 reads text:
// leading spaces, an optional sign, digits; 0 when there are none. Out of
// range values saturate.
func atoi(b []byte) int64 {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == '\f' || b[i] == '\v') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			v = math.MaxUint64
			continue
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return math.MinInt64
		}
		return -int64(v)
	}
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// uvarint decodes SQLite's big-endian varint (1–9 bytes; the ninth byte
// contributes all 8 bits). It returns the bytes read, 0 if b is too short.
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return v<<8 | uint64(b[8]), 9
}
