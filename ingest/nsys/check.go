package nsys

import (
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// Range checks at ingest. Every enum and id column is checked once here, so
// that consumers can index by the values they get: a value outside the
// enum's range becomes the enum's "unknown" value, an id outside its sane
// range becomes -1 (unknown), a StringIds reference that does not resolve
// becomes a placeholder name, and a row whose times are unusable (start
// NULL or negative, end before start) is left out. Each (table, column)
// gives one warning with a count and an example value (one per kind of
// bad value: a column can have two).

// The enum ranges and id bounds are declared with the tables
// (schema.Column.Hi and Unknown).
const (
	unknownID       = -1
	unresolvedIDFmt = "[unknown string id %d]"
)

// warnKey names the column a warning is about and what is wrong with it
// (a column can have two kinds of bad values).
type warnKey struct{ table, col, what string }

// warnAcc counts the bad values of one column.
type warnAcc struct {
	n       int64
	example int64
	noEx    bool   // the values are not integers: no example
	what    string // e.g. "values outside 0..13, read as 0 (unknown)"
}

// checks accumulates the range-check warnings of one part of a scan or,
// added up (addPart) and merged, of a Reader.
type checks struct {
	mu  sync.Mutex
	m   map[warnKey]*warnAcc
	win *window // the trace window (window.go); nil: absolute bounds only
}

// bad records one bad value of table.col.
func (c *checks) bad(table, col string, v int64, what string) { c.add(table, col, v, false, what) }

// badText records one bad value of table.col that is not an integer.
func (c *checks) badText(table, col string, what string) { c.add(table, col, 0, true, what) }

func (c *checks) add(table, col string, v int64, noEx bool, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[warnKey]*warnAcc{}
	}
	k := warnKey{table, col, what}
	a := c.m[k]
	if a == nil {
		a = &warnAcc{example: v, noEx: noEx, what: what}
		c.m[k] = a
	}
	a.n++
}

// addPart adds o's findings (a later part of the same scan): counts sum,
// the first example stays.
func (c *checks) addPart(o *checks) {
	for k, a := range o.m {
		if c.m == nil {
			c.m = map[warnKey]*warnAcc{}
		}
		if b := c.m[k]; b != nil {
			b.n += a.n
		} else {
			x := *a
			c.m[k] = &x
		}
	}
}

// merge adds one finished scan's warnings: a table scanned twice (say by
// two consumers) keeps the larger count, not the sum.
func (c *checks) merge(o *checks) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, a := range o.m {
		if c.m == nil {
			c.m = map[warnKey]*warnAcc{}
		}
		if b := c.m[k]; b == nil || b.n < a.n {
			x := *a
			c.m[k] = &x
		}
	}
}

// Warnings lists, one line per column, the values the range checks
// replaced and the rows they left out, sorted. It implements ingest.Warner.
func (r *Reader) Warnings() []string {
	c := &r.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	out := r.notes.all()
	for k, a := range c.m {
		rows := "rows"
		if a.n == 1 {
			rows = "row"
		}
		line := fmt.Sprintf("%s.%s: %d %s with %s", k.table, k.col, a.n, rows, a.what)
		if !a.noEx {
			line += fmt.Sprintf(" (e.g. %d)", a.example)
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// enum returns v when 0 <= v <= hi, else unknown (recording a warning).
func (c *checks) enum(table, col string, v, hi, unknown int64) int64 {
	if v >= 0 && v <= hi {
		return v
	}
	c.bad(table, col, v, fmt.Sprintf("values outside 0..%d, read as %d (unknown)", hi, unknown))
	return unknown
}

// id returns v when 0 <= v < limit, else -1 (recording a warning).
func (c *checks) id(table, col string, v, limit int64) int64 {
	if v >= 0 && v < limit {
		return v
	}
	c.bad(table, col, v, fmt.Sprintf("ids outside 0..%d, read as -1 (unknown)", limit-1))
	return unknownID
}

// times reports whether a row's start and end are usable: start present
// and not negative, end (when hasEnd) present and not before start, both
// inside the trace window (window.go).
func (c *checks) times(table string, start, end sql.NullInt64, hasEnd bool) bool {
	switch {
	case !start.Valid:
		c.bad(table, "start", 0, "NULL start, left out")
	case start.Int64 < 0:
		c.bad(table, "start", start.Int64, "negative start, left out")
	case hasEnd && !end.Valid:
		c.bad(table, "end", 0, "NULL end, left out")
	case hasEnd && end.Int64 < start.Int64:
		d := end.Int64 - start.Int64
		if d >= 0 {
			d = math.MinInt64 // more than 2^63 ns before: the difference overflows
		}
		c.bad(table, "end", d, "end before start, left out; the example is end-start")
	default:
		return c.inWindow(table, start.Int64, end.Int64, hasEnd)
	}
	return false
}

// strs is StringIds. Ids below 1<<24 (all of them in nsys exports) keep
// their values back to back in a few large strings (chunks), located by
// loc[id] (chunk, offset, length), with a bitmap of the ids present, so
// that resolving an id is an index and checking it a bit test; other ids
// go to a map. Millions of kernel names as separate strings would make
// every GC cycle of the analysis long.
type strs struct {
	chunks []string
	loc    []strLoc
	m      map[int64]string
	dense  []uint64
	// Read by the page reader (stringids.go): every value back to back
	// in id order in data, id's at data[offs[id]:offs[id+1]], and the same
	// as an Arrow dictionary; loc, chunks and m are then unused.
	data []byte
	offs []int32
	dict *ingest.SharedDict
	// An index (lazy, stringids.go): dense says which ids exist, values
	// are read from their leaf when asked for and kept in cache.
	lazy    bool
	indexed bool // ids are canonical (canon): from an index
	pages   *sqlitefile.File
	leaves  []uint32
	cols    []sqlitefile.Column
	flags   []ingest.NameFlag // by id
	canon   map[int64]int64   // an id whose string an earlier id has → that id
	mu      sync.Mutex
	cache   map[int64]string
	err     error // the first failed lookup
}

type strLoc struct {
	chunk, off, n uint32
}

// strsBuilder collects StringIds rows for strs.
type strsBuilder struct {
	cur    strings.Builder // the chunk being filled; never grown once handed out
	chunks []string
	ids    []int64
	locs   []strLoc
	m      map[int64]string
	hi     int64
}

const (
	maxDenseStringID = 1 << 24
	strChunkBytes    = 4 << 20
)

func (b *strsBuilder) add(id int64, v string) {
	if id < 0 || id >= maxDenseStringID || len(v) >= 1<<31 {
		if b.m == nil {
			b.m = map[int64]string{}
		}
		b.m[id] = v
		return
	}
	if b.cur.Cap()-b.cur.Len() < len(v) {
		b.seal()
		b.cur.Grow(max(strChunkBytes, len(v)))
	}
	b.ids = append(b.ids, id)
	b.locs = append(b.locs, strLoc{uint32(len(b.chunks)), uint32(b.cur.Len()), uint32(len(v))})
	b.cur.WriteString(v)
	b.hi = max(b.hi, id+1)
}

// seal ends the current chunk.
func (b *strsBuilder) seal() {
	if b.cur.Cap() > 0 {
		b.chunks = append(b.chunks, b.cur.String())
		b.cur = strings.Builder{}
	}
}

func (b *strsBuilder) done() *strs {
	b.seal()
	s := &strs{chunks: b.chunks, m: b.m, loc: make([]strLoc, b.hi), dense: make([]uint64, (b.hi+63)/64)}
	for i, id := range b.ids { // a repeated id: the last row wins, as in a map
		s.loc[id] = b.locs[i]
		s.dense[id/64] |= 1 << (id % 64)
	}
	return s
}

// has reports whether id is in StringIds.
func (s *strs) has(id int64) bool {
	if id >= 0 && id < int64(len(s.dense))*64 {
		return s.dense[id/64]&(1<<(id%64)) != 0
	}
	_, ok := s.m[id]
	return ok && (id < 0 || id >= maxDenseStringID)
}

// ref checks a StringIds reference; a value that does not resolve is
// recorded, and get then yields the placeholder name.
func (c *checks) ref(s *strs, table, col string, id int64) {
	if !s.has(id) {
		c.bad(table, col, id, "ids not in StringIds, read as \"[unknown string id N]\"")
	}
}

// get resolves a StringIds reference ("[unknown string id N]" when it does
// not resolve; the caller checked it with ref).
func (s *strs) get(id int64) string {
	if s.lazy {
		if s.has(id) {
			return s.lazyGet(id)
		}
		return fmt.Sprintf(unresolvedIDFmt, id)
	}
	if s.offs != nil {
		if s.has(id) {
			return s.value(id)
		}
		return fmt.Sprintf(unresolvedIDFmt, id)
	}
	if id >= 0 && id < int64(len(s.loc)) && s.dense[id/64]&(1<<(id%64)) != 0 {
		l := s.loc[id]
		if l.n == 0 {
			return ""
		}
		return s.chunks[l.chunk][l.off : l.off+l.n]
	}
	if v, ok := s.m[id]; ok {
		return v
	}
	return fmt.Sprintf(unresolvedIDFmt, id)
}

// notes are warnings about the read itself (a fallback to SQLite).
type notes struct {
	mu   sync.Mutex
	list []string
}

// add records a warning about the read itself (one per table).
func (n *notes) add(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Contains(n.list, msg) {
		n.list = append(n.list, msg)
	}
}

// all returns a copy of the warnings.
func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.list)
}
