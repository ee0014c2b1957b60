package sqlitefile

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The checks SQLite makes on the pages it reads (btreeInitPage,
// btreeComputeFreeSpace, the cell and overflow walks), made here before a
// page's rows are used, plus the ones its integrity check makes on key
// order and cell overlap. A page that fails any of them is an ErrCorrupt:
// callers fall back to SQLite, which either reads the rows its own way or
// reports the damage.

// bound is the key range a b-tree page may hold: lo < rowid <= hi; child
// is set for a page below the root, which SQLite requires to hold a cell
// (moveToChild).
type bound struct {
	lo, hi int64
	child  bool
}

var full = bound{lo: math.MinInt64, hi: math.MaxInt64}

// extent is a byte range [start, end) of a page.
type extent struct{ start, end int }

// checkPage checks the b-tree page header at off of page p (pg holds the
// usable bytes), its cell pointer array, every cell's extent and the
// freeblock chain: cells and freeblocks inside the cell content area, none
// overlapping, free space as SQLite counts it in range. It returns the
// number of cells and the offset of the cell pointer array. scratch is
// reused between calls.
func checkPage(pg []byte, off int, p uint32, interior bool, scratch *[]extent) (int, int, error) {
	usable := len(pg)
	hdr := 8
	if interior {
		hdr = 12
	}
	if off+hdr > usable {
		return 0, 0, fmt.Errorf("%w: page %d: header overflows the page", ErrCorrupt, p)
	}
	n := int(binary.BigEndian.Uint16(pg[off+3:]))
	ptrs := off + hdr
	first := ptrs + 2*n // first byte after the cell pointer array
	if n > (usable-8)/6 || first > usable {
		return 0, 0, fmt.Errorf("%w: page %d: %d cells overflow the page", ErrCorrupt, p, n)
	}
	top := int(binary.BigEndian.Uint16(pg[off+5:]))
	if top == 0 {
		top = 65536
	}
	if top < first || top > usable {
		return 0, 0, fmt.Errorf("%w: page %d: cell content area starts at %d (cells end at %d)", ErrCorrupt, p, top, first)
	}
	frag := int(pg[off+7])
	ex := (*scratch)[:0]
	for i := 0; i < n; i++ {
		at := int(binary.BigEndian.Uint16(pg[ptrs+2*i:]))
		if at < top || at > usable-4 {
			return 0, 0, fmt.Errorf("%w: page %d: cell %d at offset %d outside the cell content area %d..%d", ErrCorrupt, p, i, at, top, usable)
		}
		size, err := cellSize(pg, at, interior)
		if err != nil {
			return 0, 0, fmt.Errorf("page %d cell %d: %w", p, i, err)
		}
		if at+size > usable {
			return 0, 0, fmt.Errorf("%w: page %d: cell %d (%d bytes at %d) overflows the page", ErrCorrupt, p, i, size, at)
		}
		ex = append(ex, extent{at, at + size})
	}
	// The freeblock chain: ascending offsets, inside the content area,
	// each at least 4 bytes and ending before the next.
	free := frag + top
	for fb, hops := int(binary.BigEndian.Uint16(pg[off+1:])), 0; fb != 0; hops++ {
		if fb < top || fb > usable-4 || hops > usable/4 {
			return 0, 0, fmt.Errorf("%w: page %d: freeblock at %d", ErrCorrupt, p, fb)
		}
		next := int(binary.BigEndian.Uint16(pg[fb:]))
		size := int(binary.BigEndian.Uint16(pg[fb+2:]))
		if size < 4 || fb+size > usable || (next != 0 && next <= fb+size+3) {
			return 0, 0, fmt.Errorf("%w: page %d: freeblock at %d (%d bytes, next %d)", ErrCorrupt, p, fb, size, next)
		}
		free += size
		ex = append(ex, extent{fb, fb + size})
		fb = next
	}
	if free > usable || free < first {
		return 0, 0, fmt.Errorf("%w: page %d: %d free bytes", ErrCorrupt, p, free-first)
	}
	// No two cells or freeblocks share a byte. SQLite writes cells from
	// the end of the page down, so the list is usually sorted already.
	if !slices.IsSortedFunc(ex, func(a, b extent) int { return a.start - b.start }) {
		slices.SortFunc(ex, func(a, b extent) int { return a.start - b.start })
	}
	for i := 1; i < len(ex); i++ {
		if ex[i].start < ex[i-1].end {
			return 0, 0, fmt.Errorf("%w: page %d: cells or freeblocks overlap at offset %d", ErrCorrupt, p, ex[i].start)
		}
	}
	*scratch = ex
	return n, ptrs, nil
}

// cellSize is the size on the page of the cell at offset at: for an
// interior table cell the child pointer and key, for a leaf the payload
// size, rowid and local payload (and the overflow pointer when it spills).
func cellSize(pg []byte, at int, interior bool) (int, error) {
	if interior {
		_, k := uvarint(pg[at+4:])
		if k == 0 {
			return 0, fmt.Errorf("%w: interior cell key", ErrCorrupt)
		}
		return 4 + k, nil
	}
	size, k := uvarint(pg[at:])
	if k == 0 {
		return 0, fmt.Errorf("%w: payload size", ErrCorrupt)
	}
	_, k2 := uvarint(pg[at+k:])
	if k2 == 0 {
		return 0, fmt.Errorf("%w: rowid", ErrCorrupt)
	}
	u := uint64(len(pg))
	n := k + k2
	if size <= u-35 {
		n += int(size)
	} else {
		m := (u-12)*32/255 - 23
		local := m + (size-m)%(u-4)
		if local > u-35 {
			local = m
		}
		n += int(local) + 4
	}
	if n < 4 {
		n = 4 // SQLite pads smaller cells to 4 bytes
	}
	return n, nil
}
