package nsys

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	mathbits "math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// StringIds through the page reader. Exports with millions of distinct
// kernel names have StringIds tables of hundreds of MB, more than all the
// rest of what an analysis keeps. Every scan first needs to know which ids
// exist, so StringIds is read once up front, in parallel leaf ranges, and
// kept only as an index (stringIDsIndex): a bit per id, its NameFlags, and
// the ids whose string an earlier id has. Values are read when asked for
// (lookup: the one leaf that holds the id) and cached; names printed, API
// names and the like are few. Scans that need every kernel name as a
// string (an export) get the whole table in one buffer (stringIDsPages),
// read then.

// stringIDsCols returns StringIds' page layout and the id and value
// columns, or ok false when the page reader cannot read it (a table that
// is not a rowid table keyed by id; SQLite reads it and reports what is
// wrong).
func (st *stringTable) stringIDsCols() (pt *pageTable, cols []sqlitefile.Column, ok bool) {
	r := st.r
	if r.pages == nil || !r.opts.pageReads() {
		return nil, nil, false
	}
	pt, err := r.layouts.pageLayout("StringIds")
	if err != nil || pt == nil || len(pt.leaves) == 0 {
		return nil, nil, false
	}
	idc, ok1 := pt.cols["id"]
	vc, ok2 := pt.cols["value"]
	if !ok1 || !ok2 || idc.Index != sqlitefile.RowID {
		return nil, nil, false
	}
	vc.Text = true
	return pt, []sqlitefile.Column{idc, vc}, true
}

// eachStringID runs fn on every row of StringIds, in parts of consecutive
// leaves read concurrently (at most as many at a time as there are SQLite
// readers); within a part ids ascend (they are the rowids). v is a view,
// valid only during the call.
func (st *stringTable) eachStringID(pt *pageTable, cols []sqlitefile.Column, nParts int, fn func(part int, id int64, v string) error) error {
	r := st.r
	return r.strtab.eachStringIDSem(pt, cols, nParts, true, fn)
}

// eachStringIDSem is eachStringID, holding a reader slot per part only
// when sem is set: Names may run inside a scan's callback, which holds
// one already.
func (st *stringTable) eachStringIDSem(pt *pageTable, cols []sqlitefile.Column, nParts int, sem bool, fn func(part int, id int64, v string) error) error {
	r := st.r
	parts := stringIDParts(pt, nParts)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, leaves := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem {
				readers <- struct{}{}
				defer func() { <-readers }()
			}
			cur := r.pages.NewCursor(leaves, cols)
			cur.SetColumns(pt.ncols)
			cur.SetViews()
			vals := make([]int64, 2*fastRows)
			nulls := make([]uint8, 2*fastRows)
			texts := make([]string, 2*fastRows)
			for {
				n, err := cur.ReadText(vals, nulls, texts)
				for j := 0; j < n; j++ {
					if e := fn(i, vals[2*j], texts[2*j+1]); e != nil {
						errs[i] = e
						return
					}
				}
				if err == io.EOF {
					return
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stringIDParts cuts pt's leaves into the parts eachStringID reads.
func stringIDParts(pt *pageTable, nParts int) [][]uint32 {
	per := (len(pt.leaves) + nParts - 1) / nParts
	var parts [][]uint32
	for l := pt.leaves; len(l) > 0; {
		k := min(per, len(l))
		parts = append(parts, l[:k])
		l = l[k:]
	}
	return parts
}

func stringIDNParts(pt *pageTable) int { return min(len(pt.leaves)/64+1, 4*cap(readers)) }

// stringIDsIndex reads StringIds through the page reader into an index
// (strs.lazy); nil (and no error) when it cannot: see stringIDsCols, or an
// id is outside 0..maxDenseStringID-1.
func (st *stringTable) stringIDsIndex() (*strs, error) {
	r := st.r
	pt, cols, ok := r.strtab.stringIDsCols()
	if !ok {
		return nil, nil
	}
	errOut := errors.New("not for the page path")
	nParts := stringIDNParts(pt)
	type entry struct {
		id   uint32
		flag ingest.NameFlag
		h    uint64
	}
	// Each part's entries in blocks of a fixed size, not one slice
	// doubling its way up: millions of names were copied at every
	// doubling (0.4 of name-diverse's 10 CPU-s).
	const block = 1 << 14
	got := make([][][]entry, nParts)
	seed := maphash.MakeSeed()
	err := r.strtab.eachStringID(pt, cols, nParts, func(p int, id int64, v string) error {
		if id < 0 || id >= maxDenseStringID {
			return errOut
		}
		g := got[p]
		if len(g) == 0 || len(g[len(g)-1]) == block {
			g = append(g, make([]entry, 0, block))
			got[p] = g
		}
		g[len(g)-1] = append(g[len(g)-1], entry{uint32(id), ingest.NameFlags(v), maphash.String(seed, v)})
		return nil
	})
	if err != nil {
		return nil, r.strtab.stringIDsPageErr(err, errOut)
	}
	hi, n := int64(0), 0
	for _, g := range got {
		if len(g) > 0 {
			last := g[len(g)-1]
			hi = max(hi, int64(last[len(last)-1].id)+1)
		}
		for _, b := range g {
			n += len(b)
		}
	}
	s := &strs{lazy: true, indexed: true, pages: r.pages, leaves: pt.leaves, cols: cols, flags: make([]ingest.NameFlag, hi), dense: make([]uint64, (hi+63)/64), cache: map[int64]string{}}
	ids, hs := make([]uint32, 0, n), make([]uint64, 0, n)
	for i, g := range got {
		for _, b := range g {
			for _, e := range b {
				s.dense[e.id/64] |= 1 << (e.id % 64)
				s.flags[e.id] = e.flag
				ids = append(ids, e.id)
				hs = append(hs, e.h)
			}
		}
		got[i] = nil
	}
	if s.canon, err = findCanon(ids, hs, s.lookup); err != nil {
		return nil, r.strtab.stringIDsPageErr(err, errOut)
	}
	return s, nil
}

// findCanon maps each id whose string an earlier id has to the first such
// id (nil when every string is distinct, as in every nsys export; a merged
// or rewritten one may repeat strings). ids ascend; hs[i] is a hash of
// ids[i]'s string; value reads a string.
func findCanon(ids []uint32, hs []uint64, value func(int64) (string, error)) (map[int64]int64, error) {
	sorted := slices.Clone(hs)
	sortUint64s(sorted)
	var dup map[uint64]bool
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			if dup == nil {
				dup = map[uint64]bool{}
			}
			dup[sorted[i]] = true
		}
	}
	sorted = nil
	if dup == nil {
		return nil, nil
	}
	// Equal hashes, compared by value.
	var canon map[int64]int64
	first := map[uint64][]int64{} // hash → earlier ids of distinct strings
	for i, id := range ids {
		h := hs[i]
		if !dup[h] {
			continue
		}
		v, err := value(int64(id))
		if err != nil {
			return nil, err
		}
		c := int64(-1)
		for _, o := range first[h] {
			w, err := value(o)
			if err != nil {
				return nil, err
			}
			if w == v {
				c = o
				break
			}
		}
		if c < 0 {
			first[h] = append(first[h], int64(id))
			continue
		}
		if canon == nil {
			canon = map[int64]int64{}
		}
		canon[int64(id)] = c
	}
	return canon, nil
}

// index makes a whole table's ids canonical (canon).
func (s *strs) index() {
	seed := maphash.MakeSeed()
	var ids []uint32
	var hs []uint64
	for w, bits := range s.dense {
		for ; bits != 0; bits &= bits - 1 {
			id := uint32(w*64 + mathbits.TrailingZeros64(bits))
			ids = append(ids, id)
			hs = append(hs, maphash.String(seed, s.get(int64(id))))
		}
	}
	s.canon, _ = findCanon(ids, hs, func(id int64) (string, error) { return s.get(id), nil })
	s.indexed = true
}

// sortUint64s sorts x ascending (LSD radix sort, 16 bits a pass).
func sortUint64s(x []uint64) {
	if len(x) < 1<<12 {
		slices.Sort(x)
		return
	}
	buf := make([]uint64, len(x))
	src, dst := x, buf
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, v := range src {
			count[v>>shift&0xffff]++
		}
		at := 0
		for i, c := range count {
			count[i] = at
			at += c
		}
		for _, v := range src {
			d := v >> shift & 0xffff
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	// Four passes: the result is back in x.
}

// lookup reads id's value from the leaf that holds it (errNoStringID:
// no such id). The value is a copy.
func (s *strs) lookup(id int64) (string, error) {
	var v string
	err := s.lookupMany([]int64{id}, func(_ int64, x string) { v = strings.Clone(x) })
	if err == nil && v == "" && !s.has(id) {
		err = errNoStringID
	}
	return v, err
}

// lookupMany calls fn with the value of each of ids that exists (a view,
// valid during the call), reading each leaf that holds one once: the leaf
// whose key range (from its parents) holds the id.
func (s *strs) lookupMany(ids []int64, fn func(id int64, v string)) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for len(ids) > 0 {
		id := ids[0]
		i := sort.Search(len(s.leaves), func(i int) bool { _, hi := s.pages.Bound(s.leaves[i]); return hi >= id })
		if i == len(s.leaves) {
			return nil // past the last leaf: none of them exists
		}
		lo, hi := s.pages.Bound(s.leaves[i])
		leaves := s.leaves[i : i+1]
		if lo == math.MinInt64 && hi == math.MaxInt64 {
			leaves, hi = s.leaves[i:], math.MaxInt64 // no known bound: read on
		}
		k, _ := slices.BinarySearch(ids, hi+1)
		if hi == math.MaxInt64 {
			k = len(ids)
		}
		if err := s.readIDs(leaves, ids[:k], fn); err != nil {
			return err
		}
		ids = ids[k:]
	}
	return nil
}

// readIDs reads leaves and calls fn for the rows with ids (ascending).
func (s *strs) readIDs(leaves []uint32, ids []int64, fn func(id int64, v string)) error {
	cur := s.pages.NewCursor(leaves, s.cols)
	defer cur.Close()
	cur.SetViews()
	vals := make([]int64, 2*64)
	nulls := make([]uint8, 2*64)
	texts := make([]string, 2*64)
	for len(ids) > 0 {
		n, err := cur.ReadText(vals, nulls, texts)
		for j := 0; j < n && len(ids) > 0; j++ {
			row := vals[2*j]
			for len(ids) > 0 && ids[0] < row {
				ids = ids[1:] // not in the table
			}
			if len(ids) > 0 && ids[0] == row {
				fn(row, texts[2*j+1])
				ids = ids[1:]
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var errNoStringID = errors.New("no such StringIds id")

// lazyGet is get for an index: the cached value, else the leaf's.
func (s *strs) lazyGet(id int64) string {
	s.mu.Lock()
	v, ok := s.cache[id]
	s.mu.Unlock()
	if ok {
		return v
	}
	v, err := s.lookup(id)
	if err != nil {
		s.mu.Lock()
		if s.err == nil && err != errNoStringID {
			s.err = fmt.Errorf("reading StringIds: %w", err)
		}
		s.mu.Unlock()
		return fmt.Sprintf(unresolvedIDFmt, id)
	}
	s.mu.Lock()
	s.cache[id] = v
	s.mu.Unlock()
	return v
}

// canonical returns the first id with id's string.
func (s *strs) canonical(id int64) int64 {
	if c, ok := s.canon[id]; ok {
		return c
	}
	return id
}

// NameIDs reports whether scans of t fill ingest.ColNameID (kernel names,
// where StringIds was read through the page reader). It implements
// ingest.NameTable.
func (r *Reader) NameIDs(t *ingest.Table) bool {
	if t != ingest.Kernel || r.SourceTable(t) == "" {
		return false
	}
	s, err := r.strtab.stringIDs()
	return err == nil && s.indexed
}

// Names resolves ColNameID values (ingest.NameTable). Many ids are read in
// one pass over StringIds, a few from their leaves.
func (r *Reader) Names(ids []int64) ([]string, error) {
	s, err := r.strtab.stringIDs()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	if !s.lazy {
		for i, id := range ids {
			out[i] = s.get(id)
		}
		return out, nil
	}
	at := map[int64][]int{}
	for i, id := range ids {
		at[id] = append(at[id], i)
		out[i] = fmt.Sprintf(unresolvedIDFmt, id)
	}
	set := func(id int64, v string) {
		v = strings.Clone(v)
		for _, i := range at[id] {
			out[i] = v
		}
	}
	pt, cols, whole := r.strtab.stringIDsCols()
	if !whole || len(at) < max(len(s.leaves)/4, 4096) {
		// Few ids for the table: each from its leaf.
		uniq := make([]int64, 0, len(at))
		for id := range at {
			uniq = append(uniq, id)
		}
		if err := s.lookupMany(uniq, set); err != nil {
			return nil, fmt.Errorf("reading StringIds: %w", err)
		}
		return out, nil
	}
	var mu sync.Mutex
	err = r.strtab.eachStringIDSem(pt, cols, stringIDNParts(pt), false, func(_ int, id int64, v string) error {
		if _, ok := at[id]; ok {
			mu.Lock()
			set(id, v)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading StringIds: %w", err)
	}
	return out, nil
}

// NameFlags returns ingest.NameFlags of id's string (ingest.NameTable).
func (r *Reader) NameFlags(id int64) ingest.NameFlag {
	s, err := r.strtab.stringIDs()
	if err != nil {
		return 0
	}
	if s.lazy {
		if id >= 0 && id < int64(len(s.flags)) {
			return s.flags[id]
		}
		return 0
	}
	return ingest.NameFlags(s.get(id))
}

// stringIDsPages reads StringIds through the page reader into one buffer;
// nil (and no error) when it cannot: see stringIDsCols, an id is outside
// 0..maxDenseStringID-1, the values pass 2 GiB, or a page is doubtful
// (then SQLite reads the whole table, as before). It reads the table
// twice: the first pass learns each value's length (no copy), so that the
// second can copy every value straight to its place in one buffer, in id
// order, with nothing allocated per string. That buffer and its offsets
// are also an Arrow string array (ingest.SharedDict) that the kernel name
// columns use as their dictionary, indexed by id.
func (st *stringTable) stringIDsPages() (*strs, error) {
	r := st.r
	pt, cols, ok := r.strtab.stringIDsCols()
	if !ok {
		return nil, nil
	}
	nParts := stringIDNParts(pt)
	each := func(fn func(part int, id int64, v string) error) error {
		return r.strtab.eachStringID(pt, cols, nParts, fn)
	}
	errOut := errors.New("not for the page path")
	// Pass 1: ids and lengths, by part (ids ascend: they are the rowids).
	type idLen struct{ id, n uint32 }
	lens := make([][]idLen, nParts)
	err := each(func(p int, id int64, v string) error {
		if id < 0 || id >= maxDenseStringID {
			return errOut
		}
		lens[p] = append(lens[p], idLen{uint32(id), uint32(min(len(v), math.MaxUint32))})
		return nil
	})
	if err != nil {
		return nil, r.strtab.stringIDsPageErr(err, errOut)
	}
	hi, total := int64(0), int64(0)
	for _, l := range lens {
		for _, x := range l {
			total += int64(x.n)
		}
		if len(l) > 0 {
			hi = int64(l[len(l)-1].id) + 1
		}
	}
	if total >= math.MaxInt32 {
		return nil, nil
	}
	s := &strs{offs: make([]int32, hi+1), dense: make([]uint64, (hi+63)/64)}
	at, next := int32(0), int64(0)
	for _, l := range lens {
		for _, x := range l {
			for ; next <= int64(x.id); next++ {
				s.offs[next] = at
			}
			s.dense[x.id/64] |= 1 << (x.id % 64)
			at += int32(x.n)
		}
	}
	for ; next <= hi; next++ {
		s.offs[next] = at
	}
	lens = nil
	// Pass 2: the values, each copied to its place.
	s.data = make([]byte, total)
	err = each(func(_ int, id int64, v string) error {
		if id < 0 || id >= hi || int(s.offs[id+1]-s.offs[id]) != len(v) {
			return fmt.Errorf("%w: StringIds changed between reads", sqlitefile.ErrCorrupt)
		}
		copy(s.data[s.offs[id]:], v)
		return nil
	})
	if err != nil {
		return nil, r.strtab.stringIDsPageErr(err, errOut)
	}
	s.dict = ingest.NewSharedDict(s.data, s.offs)
	return s, nil
}

// stringIDsPageErr is the page path's answer to err: fall back to SQLite
// (nil) for damage or a table the path does not take, unless the page
// reader must not fall back.
func (st *stringTable) stringIDsPageErr(err, errOut error) error {
	r := st.r
	if errors.Is(err, errOut) {
		return nil
	}
	if errors.Is(err, sqlitefile.ErrCorrupt) && r.opts.Read != ReadPages {
		return r.doubted(schema.StringIds.Name, err, fmt.Sprintf("StringIds: the page reader doubted a page (%v); the table was read through SQLite", err))
	}
	return r.wrapDBErr("reading StringIds", err)
}

// value returns id's string from the page path's buffer.
func (s *strs) value(id int64) string {
	a, b := s.offs[id], s.offs[id+1]
	if a == b {
		return ""
	}
	return unsafe.String(&s.data[a], int(b-a))
}
