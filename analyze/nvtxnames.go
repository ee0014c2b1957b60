package analyze

import (
	"github.com/umtrace/umtrace/analyze/internal/intern"
	"hash/maphash"
	"strings"
)

// NVTX range names, held as templates. Traces name ranges by layer,
// bucket or step number ("aten::addmm ... [model.encoder.layers.186724
// ...]", "nccl:all_reduce<...> bucket 99998 [...]"): hundreds of thousands
// of distinct 200-byte names that differ only in their digits. Each name
// is kept as its template (the name with every run of ASCII digits as one
// \x00 byte; few distinct, interned) and its digit runs (a few bytes), and
// rebuilt when asked for. A template's digitsToN form is the name's step
// key, so grouping ranges by key never rebuilds a name.
type rangeNameTable struct {
	tmpls *intern.Table // templates
	keys  []string      // per template: its step key (digitsToN of the names)
	// per name: its template and where its digit runs are, each
	// followed by a '.' (digits[lo:hi]), in one record
	recs   []nameRec
	digits []byte
	// names holding \x00 themselves, or whose digit runs pass 4 GiB in
	// all, are kept whole
	whole map[int32]string
	// While collecting: the names by hash, in an open-addressing table
	// (linear probing from the hash's top bits). A slot holds the top 32
	// bits of a name's hash and its id + 1 (0: empty): a table of at most
	// 2^32 slots grows from its slots alone. hash2s[id] is a second hash
	// of id's name, under another seed: a slot whose bits match is the
	// name when its second hash is the name's too. The 32 bits and the
	// second hash under random seeds are one 96-bit key: the chance that
	// any of a trace's millions of lookups meets another name with both is
	// below 10^-16. Comparing the names instead (the template, then each
	// digit run) was 160 of a lookup's 360 ns on name-diverse's 200-byte
	// names. (A Go map of hash → id cost two to three cache misses a
	// lookup against one here; both hashes kept per name, 16 bytes, were
	// 2.4 MB more at the read's end, the analysis' memory peak.)
	slots  []uint64
	bits   uint // len(slots) is 1<<bits
	hash2s []uint64
	seed   maphash.Seed
	seed2  maphash.Seed
	buf    []byte
}

// nameRec is a name of a rangeNameTable: its template (-1: kept whole)
// and its digit runs' span.
type nameRec struct {
	tmpl   int32
	lo, hi uint32
}

func newRangeNameTable() *rangeNameTable {
	return &rangeNameTable{tmpls: intern.New(), seed: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// parts returns id's template and digit runs (ok false: the name is kept
// whole).
func (t *rangeNameTable) parts(id int32) (tm string, ds []byte, ok bool) {
	r := t.recs[id]
	if r.tmpl < 0 {
		return "", nil, false
	}
	return t.tmpls.At(r.tmpl), t.digits[r.lo:r.hi], true
}

// len is the number of names.
func (t *rangeNameTable) Len() int { return len(t.recs) }

// lookup returns s's id, if s has one; it only reads the table, so
// lookups may run concurrently (not with id).
func (t *rangeNameTable) lookup(s string) (int32, bool) {
	id, _, _ := t.lookupHashed(s)
	return id, id >= 0
}

// lookupHashed is lookup, returning s's two hashes too (for idHashed):
// hashing a name is a serial cost where names are long and mostly new.
func (t *rangeNameTable) lookupHashed(s string) (id int32, h, h2 uint64) {
	h = maphash.String(t.seed, s)
	id, _ = t.find(s, h, &h2)
	if id < 0 && h2 == 0 {
		h2 = t.hash2(s)
	}
	return id, h, h2
}

// find returns the id of s, whose hash is h, or -1 and the empty slot
// where it would go; h2 is s's second hash, 0 until find needs it.
func (t *rangeNameTable) find(s string, h uint64, h2 *uint64) (id int32, slot uint64) {
	if len(t.slots) == 0 {
		return -1, 0
	}
	mask := uint64(len(t.slots) - 1)
	for i := h >> (64 - t.bits); ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == 0 {
			return -1, i
		}
		if e>>32 == h>>32 {
			if *h2 == 0 {
				*h2 = t.hash2(s)
			}
			if id := int32(uint32(e)) - 1; t.hash2s[id] == *h2 {
				return id, i
			}
		}
	}
}

// hash2 is s's second hash (never 0: 0 stands for not yet computed).
func (t *rangeNameTable) hash2(s string) uint64 { return maphash.String(t.seed2, s) | 1 }

// id returns s's id, adding it when new.
func (t *rangeNameTable) id(s string) int32 { return t.idHashed(s, maphash.String(t.seed, s), 0) }

// idHashed is id of s, whose hash is h and second hash h2 (0: not yet
// computed).
func (t *rangeNameTable) idHashed(s string, h, h2 uint64) int32 {
	id, slot := t.find(s, h, &h2)
	if id >= 0 {
		return id
	}
	id = int32(len(t.recs))
	if 2*(len(t.hash2s)+1) > len(t.slots) {
		t.grow()
		_, slot = t.find(s, h, &h2)
	}
	if h2 == 0 {
		h2 = t.hash2(s)
	}
	t.slots[slot] = slotOf(h, id)
	t.hash2s = append(t.hash2s, h2)
	t.add(s)
	return id
}

// slotOf is the slot of the name id whose hash is h.
func slotOf(h uint64, id int32) uint64 { return h>>32<<32 | uint64(uint32(id+1)) }

// grow doubles the slots (at least 1024) and puts every name back, where
// the top bits of its hash that its old slot holds say.
func (t *rangeNameTable) grow() {
	old := t.slots
	t.bits = max(10, t.bits+1)
	t.slots = make([]uint64, 1<<t.bits)
	mask := uint64(len(t.slots) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := e >> (64 - t.bits)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}

func (t *rangeNameTable) add(s string) {
	id := int32(len(t.recs))
	lo := uint32(len(t.digits))
	if strings.IndexByte(s, 0) >= 0 || len(t.digits)+len(s) >= 1<<32-1 {
		if t.whole == nil {
			t.whole = map[int32]string{}
		}
		t.whole[id] = strings.Clone(s)
		t.recs = append(t.recs, nameRec{-1, lo, lo})
		return
	}
	b := t.buf[:0]
	for i := 0; i < len(s); {
		if c := s[i]; c >= '0' && c <= '9' {
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b = append(b, 0)
			t.digits = append(t.digits, s[i:j]...)
			t.digits = append(t.digits, '.')
			i = j
			continue
		}
		b = append(b, s[i])
		i++
	}
	t.buf = b
	tm := t.tmpls.ID(string(b)) // copied by the interner when new
	if int(tm) == len(t.keys) {
		t.keys = append(t.keys, strings.ReplaceAll(t.tmpls.At(tm), "\x00", "N"))
	}
	t.recs = append(t.recs, nameRec{tm, lo, uint32(len(t.digits))})
}

// name returns id's name.
func (t *rangeNameTable) name(id int32) string {
	tm, ds, ok := t.parts(id)
	if !ok {
		return t.whole[id]
	}
	var b strings.Builder
	b.Grow(len(tm) + len(ds))
	for i := 0; i < len(tm); i++ {
		if tm[i] != 0 {
			b.WriteByte(tm[i])
			continue
		}
		j := 0
		for ds[j] != '.' {
			j++
		}
		b.Write(ds[:j])
		ds = ds[j+1:]
	}
	return b.String()
}

// prefix is name(id)'s first n bytes (all of it when shorter), without
// making the whole name.
func (t *rangeNameTable) prefix(id int32, n int) string {
	tm, ds, ok := t.parts(id)
	if !ok {
		w := t.whole[id]
		return w[:min(n, len(w))]
	}
	b := make([]byte, 0, n)
	for i := 0; i < len(tm) && len(b) < n; i++ {
		if tm[i] != 0 {
			b = append(b, tm[i])
			continue
		}
		j := 0
		for ds[j] != '.' {
			j++
		}
		b = append(b, ds[:min(j, n-len(b))]...)
		ds = ds[j+1:]
	}
	return string(b)
}

// key returns digitsToN of id's name.
func (t *rangeNameTable) key(id int32) string {
	if r := t.recs[id]; r.tmpl >= 0 {
		return t.keys[r.tmpl]
	}
	return digitsToN(t.whole[id])
}

// done drops what only collecting needs.
func (t *rangeNameTable) done() {
	t.slots, t.hash2s, t.buf = nil, nil, nil
	t.tmpls.Done()
}
