package sqlitefile

import (
	"cmp"
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

// leafBounds holds the bound of every leaf Leaves has walked to, by page:
// the pages sorted, their ranges beside them and the child flags as bits,
// about 20 bytes a leaf. A map of bounds took 48 (19 MB for a 1.6 GB
// export, growing with the file).
type leafBounds struct {
	pages []uint32
	rng   [][2]int64
	child []uint64 // bit i: rng[i]'s leaf is below the root
}

// get returns leaf p's bound.
func (lb *leafBounds) get(p uint32) (bound, bool) {
	i, ok := slices.BinarySearch(lb.pages, p)
	if !ok {
		return bound{}, false
	}
	return bound{lo: lb.rng[i][0], hi: lb.rng[i][1], child: lb.child[i/64]>>(i%64)&1 == 1}, true
}

// with returns lb with the bounds of pages added; a page already in lb
// takes its new bound (the last one given wins).
func (lb leafBounds) with(pages []uint32, bs []bound) leafBounds {
	order := make([]int, len(pages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(pages[x], pages[y]) })
	n := len(lb.pages) + len(pages)
	out := leafBounds{pages: make([]uint32, 0, n), rng: make([][2]int64, 0, n), child: make([]uint64, (n+63)/64)}
	put := func(p uint32, lo, hi int64, child bool) {
		if k := len(out.pages); k > 0 && out.pages[k-1] == p {
			out.pages, out.rng = out.pages[:k-1], out.rng[:k-1] // replaced
			out.child[(k-1)/64] &^= 1 << ((k - 1) % 64)
		}
		k := len(out.pages)
		out.pages = append(out.pages, p)
		out.rng = append(out.rng, [2]int64{lo, hi})
		if child {
			out.child[k/64] |= 1 << (k % 64)
		}
	}
	i, j := 0, 0
	for i < len(lb.pages) || j < len(order) {
		if j == len(order) || (i < len(lb.pages) && lb.pages[i] < pages[order[j]]) {
			put(lb.pages[i], lb.rng[i][0], lb.rng[i][1], lb.child[i/64]>>(i%64)&1 == 1)
			i++
			continue
		}
		if i < len(lb.pages) && lb.pages[i] == pages[order[j]] {
			i++ // the new bound replaces it
		}
		b := bs[order[j]]
		put(pages[order[j]], b.lo, b.hi, b.child)
		j++
	}
	return out
}

// without returns lb less the bounds of pages (pages it has not are
// ignored), in new memory.
func (lb leafBounds) without(pages []uint32) leafBounds {
	drop := make([]uint64, (len(lb.pages)+63)/64)
	n := 0
	for _, p := range pages {
		if i, ok := slices.BinarySearch(lb.pages, p); ok && drop[i/64]>>(i%64)&1 == 0 {
			drop[i/64] |= 1 << (i % 64)
			n++
		}
	}
	if n == 0 {
		return lb
	}
	k := len(lb.pages) - n
	out := leafBounds{pages: make([]uint32, 0, k), rng: make([][2]int64, 0, k), child: make([]uint64, (k+63)/64)}
	for i, p := range lb.pages {
		if drop[i/64]>>(i%64)&1 == 1 {
			continue
		}
		j := len(out.pages)
		out.pages = append(out.pages, p)
		out.rng = append(out.rng, lb.rng[i])
		if lb.child[i/64]>>(i%64)&1 == 1 {
			out.child[j/64] |= 1 << (j % 64)
		}
	}
	return out
}

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
	used := 0 // bytes of the content area in cells
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
		used += size
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
	// the end of the page down, so a page filled in key order (a bulk
	// export) lists them in descending order: reversed, not sorted.
	byStart := func(a, b extent) int { return a.start - b.start }
	if !slices.IsSortedFunc(ex, byStart) {
		if slices.IsSortedFunc(ex, func(a, b extent) int { return b.start - a.start }) {
			slices.Reverse(ex)
		} else {
			slices.SortFunc(ex, byStart)
		}
	}
	for i := 1; i < len(ex); i++ {
		if ex[i].start < ex[i-1].end {
			return 0, 0, fmt.Errorf("%w: page %d: cells or freeblocks overlap at offset %d", ErrCorrupt, p, ex[i].start)
		}
	}
	// Every byte of the content area is in a cell, a freeblock or the
	// fragment count (SQLite's integrity check): a cell count or pointer
	// that lost a cell leaves bytes no one accounts for.
	if used+(free-frag-top)+frag != usable-top {
		return 0, 0, fmt.Errorf("%w: page %d: %d bytes of the cell content area in no cell or freeblock, %d counted as fragments", ErrCorrupt, p, usable-top-used-(free-top), frag)
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
