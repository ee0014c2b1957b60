package analyze

import (
	"bytes"
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
	tmpls  *intern.Table // templates
	keys   []string      // per template: its step key (digitsToN of the names)
	tmplOf []int32       // per name: its template
	// per name: its digit runs, each followed by a '.', at
	// digits[offs[id]:offs[id+1]]
	digits []byte
	offs   []uint32
	// names holding \x00 themselves, or whose digit runs pass 4 GiB in
	// all, are kept whole
	whole map[int32]string
	// While collecting: a name's hash → its id (clash: a second name of
	// a hash).
	ids   map[uint64]int32
	clash map[string]int32
	seed  maphash.Seed
	buf   []byte
}

func newRangeNameTable() *rangeNameTable {
	return &rangeNameTable{tmpls: intern.New(), offs: []uint32{0}, ids: map[uint64]int32{}, clash: map[string]int32{}, seed: maphash.MakeSeed()}
}

// len is the number of names.
func (t *rangeNameTable) Len() int { return len(t.tmplOf) }

// lookup returns s's id, if s has one; it only reads the table, so
// lookups may run concurrently (not with id).
func (t *rangeNameTable) lookup(s string) (int32, bool) {
	first, taken := t.ids[maphash.String(t.seed, s)]
	if taken {
		if t.equal(first, s) {
			return first, true
		}
		if id, ok := t.clash[s]; ok {
			return id, true
		}
	}
	return 0, false
}

// id returns s's id, adding it when new.
func (t *rangeNameTable) id(s string) int32 {
	if id, ok := t.lookup(s); ok {
		return id
	}
	h := maphash.String(t.seed, s)
	_, taken := t.ids[h]
	id := int32(len(t.tmplOf))
	if taken {
		t.clash[strings.Clone(s)] = id
	} else {
		t.ids[h] = id
	}
	t.add(s)
	return id
}

func (t *rangeNameTable) add(s string) {
	id := int32(len(t.tmplOf))
	if strings.IndexByte(s, 0) >= 0 || len(t.digits)+len(s) >= 1<<32-1 {
		if t.whole == nil {
			t.whole = map[int32]string{}
		}
		t.whole[id] = strings.Clone(s)
		t.tmplOf = append(t.tmplOf, -1)
		t.offs = append(t.offs, uint32(len(t.digits)))
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
	t.tmplOf = append(t.tmplOf, tm)
	t.offs = append(t.offs, uint32(len(t.digits)))
}

// name returns id's name.
func (t *rangeNameTable) name(id int32) string {
	if t.tmplOf[id] < 0 {
		return t.whole[id]
	}
	tm, ds := t.tmpls.At(t.tmplOf[id]), t.digits[t.offs[id]:t.offs[id+1]]
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

// equal reports whether id's name is s, without building it.
// prefix is name(id)'s first n bytes (all of it when shorter), without
// making the whole name.
func (t *rangeNameTable) prefix(id int32, n int) string {
	if t.tmplOf[id] < 0 {
		w := t.whole[id]
		return w[:min(n, len(w))]
	}
	tm, ds := t.tmpls.At(t.tmplOf[id]), t.digits[t.offs[id]:t.offs[id+1]]
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

func (t *rangeNameTable) equal(id int32, s string) bool {
	if t.tmplOf[id] < 0 {
		return t.whole[id] == s
	}
	tm, ds := t.tmpls.At(t.tmplOf[id]), t.digits[t.offs[id]:t.offs[id+1]]
	// Runs of template bytes and digit runs compared whole (memequal),
	// not byte by byte: names are ~160 bytes with a few numbers.
	k := 0 // in s
	for len(tm) > 0 {
		lit := strings.IndexByte(tm, 0)
		if lit < 0 {
			lit = len(tm)
		}
		if k+lit > len(s) || s[k:k+lit] != tm[:lit] {
			return false
		}
		k += lit
		if lit == len(tm) {
			break
		}
		tm = tm[lit+1:]
		j := bytes.IndexByte(ds, '.')
		if k+j > len(s) || s[k:k+j] != string(ds[:j]) {
			return false
		}
		k += j
		ds = ds[j+1:]
	}
	return k == len(s)
}

// key returns digitsToN of id's name.
func (t *rangeNameTable) key(id int32) string {
	if t.tmplOf[id] < 0 {
		return digitsToN(t.whole[id])
	}
	return t.keys[t.tmplOf[id]]
}

// done drops what only collecting needs.
func (t *rangeNameTable) done() {
	t.ids, t.clash, t.buf = nil, nil, nil
	t.tmpls.Done()
}
