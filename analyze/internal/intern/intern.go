// Package intern holds analyze's name tables: Table gives each distinct
// name (an API, a kernel, a fault site, an NVTX template) a dense int32 id,
// hashing each string once and keeping the bytes in an arena; with ByID it
// holds a source's string-table ids instead (Names), and reads a name only
// when asked.
package intern

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/analyze/internal/cache"
	"github.com/umtrace/umtrace/ingest"
)

type Table struct {
	// ids maps a name's 64-bit hash to its id; names whose hash another
	// Name took first are in clash. Hashing once and keying the map by
	// the hash keeps millions of 200-byte kernel names from being hashed
	// again and compared on every map growth.
	ids   map[uint64]int32
	clash map[string]int32
	seed  maphash.Seed
	names []string
	// keys maps a column's dictionary keys to ids (column).
	keys *cache.Dict[int32]
	// arena holds the names' bytes, many to an allocation: millions of
	// kernel names as separate objects make every GC cycle long.
	arena strings.Builder
	// lazy: names from a shared dictionary are added unlooked-up, each
	// dictionary entry once (the cache.Dict sees to that); dedupe merges
	// any string held under two entries after the pass. An nsys StringIds
	// table holds each string once, but a redacted or merged export need
	// not; millions of kernel names were a second of map lookups.
	lazy, lazyAdded bool
	// By source id (byID, names.go): src reads the names; sids[id] is
	// id's source id; far the other way round for large ones (while
	// collecting; SIDKey).
	src    *Names
	sids   [][]int32 // in pages (addSID); -1: in farSID
	farSID map[int32]int64
	nSIDs  int
	seen   []uint64 // bit per source id below 2^26 seen (SIDKey)
	far    map[int64]int32
}

// New returns an empty Table.
func New() *Table {
	return &Table{ids: map[uint64]int32{}, clash: map[string]int32{}, seed: maphash.MakeSeed()}
}

const arenaBytes = 1 << 20

// ID returns s's id; s may point into a batch (it is copied).
func (in *Table) ID(s string) int32 { return in.Intern(s, false) }

// Intern returns s's id; stable says s outlives its batch (a shared
// dictionary's value), so it need not be copied.
func (in *Table) Intern(s string, stable bool) int32 {
	if stable && in.lazy {
		in.lazyAdded = true
		in.names = append(in.names, s)
		return int32(len(in.names) - 1)
	}
	h := maphash.String(in.seed, s)
	first, taken := in.ids[h]
	if taken {
		if in.names[first] == s {
			return first
		}
		if id, ok := in.clash[s]; ok {
			return id
		}
	}
	if !stable {
		// s may point into an Arrow buffer released with its batch:
		// copy it. A Builder never moves bytes it has handed out in
		// String() unless it grows, so a full arena is replaced, not
		// grown.
		if in.arena.Cap()-in.arena.Len() < len(s) {
			in.arena = strings.Builder{}
			in.arena.Grow(max(arenaBytes, len(s)))
		}
		at := in.arena.Len()
		in.arena.WriteString(s)
		s = in.arena.String()[at:]
	}
	id := int32(len(in.names))
	if taken {
		in.clash[s] = id
	} else {
		in.ids[h] = id
	}
	in.names = append(in.names, s)
	return id
}

// BatchIDs interns a batch's dictionary once and returns the row → id map.
func (in *Table) BatchIDs(s ingest.Strings) []int32 {
	local := make([]int32, s.DictLen())
	for k := range local {
		local[k] = in.ID(s.DictValue(k))
	}
	return local
}

// Column prepares the interner for a batch's string column: key(s, i) is
// then row i's id. Each distinct string is hashed once per batch, or once
// per scan when the batches share a dictionary.
func (in *Table) Column(s ingest.Strings) {
	if in.keys == nil {
		in.keys = cache.NewDict(in.Intern)
	}
	in.keys.Batch(s)
	if in.keys.Shared() && !in.lazy {
		in.lazy = true
		// A trace's string table: about half of it names this column
		// (kernel names; their short and mangled forms the rest). Sized
		// once: grown by appends, millions of names were copied five
		// times over.
		in.names = slices.Grow(in.names, s.DictLen()/2)
	}
}

// Dedupe merges the names that lazy interning added more than once and
// returns each id's canonical id (the first with its string), or nil when
// no name repeats. It runs once, after the pass.
func (in *Table) Dedupe() []int32 {
	if !in.lazyAdded {
		return nil
	}
	in.lazyAdded = false
	type hashID struct {
		h  uint64
		id int32
	}
	hs := make([]hashID, len(in.names))
	for i, s := range in.names {
		hs[i] = hashID{maphash.String(in.seed, s), int32(i)}
	}
	slices.SortFunc(hs, func(x, y hashID) int { return cmp.Or(cmp.Compare(x.h, y.h), cmp.Compare(x.id, y.id)) })
	var canon []int32
	for i := 0; i < len(hs); {
		j := i + 1
		for j < len(hs) && hs[j].h == hs[i].h {
			j++
		}
		// One hash, ids ascending: each id goes to the first equal one.
		for a := i + 1; a < j; a++ {
			for b := i; b < a; b++ {
				if in.names[hs[a].id] != in.names[hs[b].id] {
					continue
				}
				if canon == nil {
					canon = make([]int32, len(in.names))
					for k := range canon {
						canon[k] = int32(k)
					}
				}
				canon[hs[a].id] = canon[hs[b].id]
				break
			}
		}
		i = j
	}
	return canon
}

// Key returns row i's id (-1 when null) after column(s).
func (in *Table) Key(s ingest.Strings, i int) int32 {
	if id, ok := in.keys.Get(s, i); ok {
		return id
	}
	return -1
}

// Kernel names by id. A source with a string table (ingest.NameTable: nsys
// StringIds) gives each kernel's name as an id into it: traces with
// millions of distinct 200-byte kernel names would otherwise hold every
// one of them (hundreds of MB) for the few dozen a report prints. The
// collector then keeps the source's ids, the names' flags come from the
// table, and a name is read when a report needs it (names.get).

// sourceNames resolves a NameTable's ids, once each; safe for concurrent
// use (the analyses of a file's processes run side by side).
type Names struct {
	t     ingest.NameTable
	mu    sync.Mutex
	cache map[int64]string
	err   error // the first failed read
}

// nameTable returns src's name table when it gives kernel names as ids.
func NameTable(src ingest.Source) *Names {
	if nt, ok := src.(ingest.NameTable); ok && nt.NameIDs(ingest.Kernel) {
		return &Names{t: nt, cache: map[int64]string{}}
	}
	return nil
}

// Get returns sid's string.
func (n *Names) Get(sid int64) string {
	n.mu.Lock()
	v, ok := n.cache[sid]
	n.mu.Unlock()
	if ok {
		return v
	}
	n.Fetch([]int64{sid})
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cache[sid]
}

// Fetch reads the strings of sids not read yet, in one call.
func (n *Names) Fetch(sids []int64) {
	n.mu.Lock()
	var want []int64
	for _, s := range sids {
		if _, ok := n.cache[s]; !ok {
			want = append(want, s)
		}
	}
	n.mu.Unlock()
	if len(want) == 0 {
		return
	}
	vs, err := n.t.Names(want)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil && n.err == nil {
		n.err = err
	}
	for i, s := range want {
		if i < len(vs) {
			n.cache[s] = vs[i]
		} else {
			n.cache[s] = ""
		}
	}
}

// NCCL reports whether sid names an NCCL kernel.
func (n *Names) NCCL(sid int64) bool { return n.t.NameFlags(sid)&ingest.NCCLKernel != 0 }

func (n *Names) Err() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// ByID sets in to hold source ids (from ingest.ColNameID) instead of
// names: sidKey is then a row's id and name reads the string.
func (in *Table) ByID(n *Names) { in.src = n }

// SIDKey returns the key of the name with source id sid, and gives each
// new name the next id. While collecting, a key is not yet the id: a
// source id below 2^26 is its own key (a bit per source id marks those
// seen), -1 is a null name, and a key of -2 or less stands for id -key-2
// (a source id out of that range, looked up in a map). KeyIDs turns keys
// into ids once the pass is done. Keys rather than ids while collecting:
// a table from source ids to ids for name-diverse's 4M StringIds held
// 16 MB through the read, when the analysis' memory peaks; made after the
// pass, it is gone before the analysis' next peak.
func (in *Table) SIDKey(ids *array.Int64, i int) int32 {
	if ids.IsNull(i) {
		return -1
	}
	sid := ids.Value(i)
	if sid >= 0 && sid < 1<<26 {
		w, bit := sid>>6, uint64(1)<<(sid&63)
		if int(w) >= len(in.seen) {
			in.seen = append(in.seen, make([]uint64, max(int(w)+1, 2*len(in.seen))-len(in.seen))...)
		}
		if in.seen[w]&bit == 0 {
			in.seen[w] |= bit
			in.addSID(sid)
		}
		return int32(sid)
	}
	if in.far == nil {
		in.far = map[int64]int32{}
	}
	if id, ok := in.far[sid]; ok {
		return -id - 2
	}
	id := in.addSID(sid)
	in.far[sid] = id
	return -id - 2
}

// KeyIDs returns the ids of SIDKey's keys, by key (ID reads it), and
// forgets which source ids were seen. Call it once, after the pass.
func (in *Table) KeyIDs() []int32 {
	var n int
	for w := len(in.seen) - 1; w >= 0; w-- {
		if in.seen[w] != 0 {
			n = w*64 + 64
			break
		}
	}
	in.seen = nil
	ids := make([]int32, n)
	for id := range in.nSIDs {
		if sid := in.sids[id>>sidPageBits][id&(1<<sidPageBits-1)]; sid >= 0 && sid < 1<<26 {
			ids[sid] = int32(id)
		}
	}
	return ids
}

// KeyID is the id of SIDKey's key k, from KeyIDs' ids.
func KeyID(ids []int32, k int32) int32 {
	switch {
	case k >= 0:
		return ids[k]
	case k == -1:
		return -1
	}
	return -k - 2
}

const sidPageBits = 16

// addSID gives source id sid the next id.
func (in *Table) addSID(sid int64) int32 {
	id := int32(in.nSIDs)
	if in.nSIDs>>sidPageBits == len(in.sids) {
		in.sids = append(in.sids, make([]int32, 1<<sidPageBits))
	}
	v := int32(sid)
	if sid < 0 || sid > math.MaxInt32 {
		// Source ids are small (nsys: below 2^24); a large one aside.
		if in.farSID == nil {
			in.farSID = map[int32]int64{}
		}
		in.farSID[id], v = sid, -1
	}
	in.sids[id>>sidPageBits][id&(1<<sidPageBits-1)] = v
	in.nSIDs++
	return id
}

// SID is id's source id.
func (in *Table) SID(id int32) int64 {
	if v := in.sids[id>>sidPageBits][id&(1<<sidPageBits-1)]; v >= 0 {
		return int64(v)
	}
	return in.farSID[id]
}

// Len is the number of names.
func (in *Table) Len() int {
	if in.src != nil {
		return in.nSIDs
	}
	return len(in.names)
}

// Name returns id's name.
func (in *Table) Name(id int32) string {
	if in.src != nil {
		return in.src.Get(in.SID(id))
	}
	return in.names[id]
}

// Resolve reads the names of ids in one go (names then need no read each).
func (in *Table) Resolve(ids []int32) {
	if in.src == nil || len(ids) == 0 {
		return
	}
	sids := make([]int64, len(ids))
	for i, id := range ids {
		sids[i] = in.SID(id)
	}
	in.src.Fetch(sids)
}

// At returns the name of id in a Table that holds names (not ByID): the
// per-row lookup, with no check.
func (in *Table) At(id int32) string { return in.names[id] }

// ByIDs reports whether the Table holds source ids (ByID): their Names.
func (in *Table) ByIDs() *Names { return in.src }

// Done drops what only collecting needs (the lookup maps): the Table then
// only answers Name, At, SID, Len and Resolve.
func (in *Table) Done() {
	in.ids, in.clash, in.keys, in.seen, in.far = nil, nil, nil, nil, nil
}
