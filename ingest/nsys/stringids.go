package nsys

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"unsafe"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// StringIds through the page reader. Exports with millions of distinct
// kernel names have StringIds tables of hundreds of MB that every string
// column needs before its first row: read serially through SQLite that is
// seconds before any other table can start. The page reader reads it in
// parallel leaf ranges, twice: the first pass learns each value's length
// (no copy), so that the second can copy every value straight to its place
// in one buffer, in id order, with nothing allocated per string. That
// buffer and its offsets are also an Arrow string array (ingest.SharedDict)
// that the kernel name columns use as their dictionary, indexed by id.

// stringIDsPages reads StringIds through the page reader; nil (and no
// error) when it cannot: the table is not a rowid table keyed by id, an id
// is outside 0..maxDenseStringID-1, the values pass 2 GiB, or a page is
// doubtful (then SQLite reads the whole table, as before).
func (r *Reader) stringIDsPages() (*strs, error) {
	if r.pages == nil || !pageReads {
		return nil, nil
	}
	pt, err := r.pageLayout("StringIds")
	if err != nil || pt == nil || len(pt.leaves) == 0 {
		return nil, nil // SQLite reads it (and reports what is wrong)
	}
	idc, ok1 := pt.cols["id"]
	vc, ok2 := pt.cols["value"]
	if !ok1 || !ok2 || idc.Index != sqlitefile.RowID {
		return nil, nil
	}
	vc.Text = true
	cols := []sqlitefile.Column{idc, vc}
	// Parts of consecutive leaves, read concurrently (at most as many at a
	// time as there are SQLite readers).
	nParts := min(len(pt.leaves)/64+1, 4*cap(readers))
	per := (len(pt.leaves) + nParts - 1) / nParts
	var parts [][]uint32
	for l := pt.leaves; len(l) > 0; {
		k := min(per, len(l))
		parts = append(parts, l[:k])
		l = l[k:]
	}
	// each runs fn on every row of every part, the parts concurrently.
	each := func(fn func(part int, id int64, v string) error) error {
		errs := make([]error, len(parts))
		var wg sync.WaitGroup
		for i, leaves := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				readers <- struct{}{}
				defer func() { <-readers }()
				cur := r.pages.NewCursor(leaves, cols)
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
	errOut := errors.New("not for the page path")
	// Pass 1: ids and lengths, by part (ids ascend: they are the rowids).
	type idLen struct{ id, n uint32 }
	lens := make([][]idLen, len(parts))
	err = each(func(p int, id int64, v string) error {
		if id < 0 || id >= maxDenseStringID {
			return errOut
		}
		lens[p] = append(lens[p], idLen{uint32(id), uint32(min(len(v), math.MaxUint32))})
		return nil
	})
	if err != nil {
		return nil, r.stringIDsPageErr(err, errOut)
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
		return nil, r.stringIDsPageErr(err, errOut)
	}
	s.dict = ingest.NewSharedDict(s.data, s.offs)
	return s, nil
}

// stringIDsPageErr is the page path's answer to err: fall back to SQLite
// (nil) for damage or a table the path does not take, unless the page
// reader must not fall back.
func (r *Reader) stringIDsPageErr(err, errOut error) error {
	if errors.Is(err, errOut) {
		return nil
	}
	if errors.Is(err, sqlitefile.ErrCorrupt) && !pagesOnly && !r.pagesOnly {
		r.note(fmt.Sprintf("StringIds: the page reader doubted a page (%v); the table was read through SQLite", err))
		return nil
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
