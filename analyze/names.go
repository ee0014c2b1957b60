package analyze

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/ingest"
)

// Kernel names by id. A source with a string table (ingest.NameTable: nsys
// StringIds) gives each kernel's name as an id into it: traces with
// millions of distinct 200-byte kernel names would otherwise hold every
// one of them (hundreds of MB) for the few dozen a report prints. The
// collector then keeps the source's ids, the names' flags come from the
// table, and a name is read when a report needs it (names.get).

// sourceNames resolves a NameTable's ids, once each; safe for concurrent
// use (the analyses of a file's processes run side by side).
type sourceNames struct {
	t     ingest.NameTable
	mu    sync.Mutex
	cache map[int64]string
	err   error // the first failed read
}

// nameTable returns src's name table when it gives kernel names as ids.
func nameTable(src ingest.Source) *sourceNames {
	if nt, ok := src.(ingest.NameTable); ok && nt.NameIDs(ingest.Kernel) {
		return &sourceNames{t: nt, cache: map[int64]string{}}
	}
	return nil
}

// get returns sid's string.
func (n *sourceNames) get(sid int64) string {
	n.mu.Lock()
	v, ok := n.cache[sid]
	n.mu.Unlock()
	if ok {
		return v
	}
	n.fetch([]int64{sid})
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cache[sid]
}

// fetch reads the strings of sids not read yet, in one call.
func (n *sourceNames) fetch(sids []int64) {
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

// nccl reports whether sid names an NCCL kernel.
func (n *sourceNames) nccl(sid int64) bool { return n.t.NameFlags(sid)&ingest.NCCLKernel != 0 }

func (n *sourceNames) error() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// byID sets in to hold source ids (from ingest.ColNameID) instead of
// names: sidKey is then a row's id and name reads the string.
func (in *interner) byID(n *sourceNames) { in.src = n }

// sidKey returns the id of the name with source id sid (-1 for a null one).
func (in *interner) sidKey(ids *array.Int64, i int) int32 {
	if ids.IsNull(i) {
		return -1
	}
	sid := ids.Value(i)
	if sid >= 0 && sid < 1<<26 {
		// In pages of source ids, made when first used: a table grown by
		// appends held two copies of 16 MB at a time.
		pg, at := sid>>localPageBits, sid&(1<<localPageBits-1)
		if int(pg) >= len(in.local) {
			in.local = append(in.local, make([][]int32, int(pg)+1-len(in.local))...)
		}
		if in.local[pg] == nil {
			in.local[pg] = make([]int32, 1<<localPageBits)
		}
		if id := in.local[pg][at]; id > 0 {
			return id - 1
		}
		id := in.addSID(sid)
		in.local[pg][at] = id + 1
		return id
	}
	if in.far == nil {
		in.far = map[int64]int32{}
	}
	if id, ok := in.far[sid]; ok {
		return id
	}
	id := in.addSID(sid)
	in.far[sid] = id
	return id
}

const localPageBits = 16

// addSID gives source id sid the next id.
func (in *interner) addSID(sid int64) int32 {
	id := int32(in.nSIDs)
	if in.nSIDs>>localPageBits == len(in.sids) {
		in.sids = append(in.sids, make([]int32, 1<<localPageBits))
	}
	v := int32(sid)
	if sid < 0 || sid > math.MaxInt32 {
		// Source ids are small (nsys: below 2^24); a large one aside.
		if in.farSID == nil {
			in.farSID = map[int32]int64{}
		}
		in.farSID[id], v = sid, -1
	}
	in.sids[id>>localPageBits][id&(1<<localPageBits-1)] = v
	in.nSIDs++
	return id
}

// sid is id's source id.
func (in *interner) sid(id int32) int64 {
	if v := in.sids[id>>localPageBits][id&(1<<localPageBits-1)]; v >= 0 {
		return int64(v)
	}
	return in.farSID[id]
}

// len is the number of names.
func (in *interner) Len() int {
	if in.src != nil {
		return in.nSIDs
	}
	return len(in.names)
}

// name returns id's name.
func (in *interner) name(id int32) string {
	if in.src != nil {
		return in.src.get(in.sid(id))
	}
	return in.names[id]
}

// resolve reads the names of ids in one go (names then need no read each).
func (in *interner) resolve(ids []int32) {
	if in.src == nil || len(ids) == 0 {
		return
	}
	sids := make([]int64, len(ids))
	for i, id := range ids {
		sids[i] = in.sid(id)
	}
	in.src.fetch(sids)
}

// topByTotal returns the first limit of keys (all of them when limit <= 0)
// by total, largest first, then by name. Keys that cannot be among them
// are never named; those that can (a total at least the limit-th largest:
// ties at the boundary may be many) are named in one read (resolve, when
// not nil) before they are ordered.
func topByTotal[K any](keys []K, total func(K) int64, limit int, name func(K) string, resolve func([]K)) []K {
	cand := slices.Clone(keys)
	if limit > 0 && len(keys) > limit {
		best := make([]int64, 0, limit+1) // the largest totals, descending
		for _, k := range keys {
			t := total(k)
			if len(best) == limit && t <= best[limit-1] {
				continue
			}
			i := sort.Search(len(best), func(i int) bool { return best[i] < t })
			best = slices.Insert(best, i, t)
			if len(best) > limit {
				best = best[:limit]
			}
		}
		th := best[limit-1]
		cand = cand[:0]
		for _, k := range keys {
			if total(k) >= th {
				cand = append(cand, k)
			}
		}
	}
	if resolve != nil {
		resolve(cand)
	}
	slices.SortFunc(cand, func(x, y K) int {
		if tx, ty := total(x), total(y); tx != ty {
			return cmp.Compare(ty, tx)
		}
		return cmp.Compare(name(x), name(y))
	})
	if limit > 0 && len(cand) > limit {
		cand = cand[:limit]
	}
	return cand
}
