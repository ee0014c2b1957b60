package analyze

import (
	"cmp"
	"slices"
	"sort"
)

// topByTotal returns the first limit of keys (all of them when limit <= 0)
// by total, largest first, then by name. Keys that cannot be among them
// are never named; those that can (a total at least the limit-th largest:
// ties at the boundary may be many) are named in one read (resolve, when
// not nil) before they are ordered.
func topByTotal[K any](keys []K, total func(K) int64, limit int, name func(K) string, resolve func([]K)) []K {
	var cand []K // the candidates alone: a copy of millions of keys was 8 MB at the analysis' peak
	if limit <= 0 || len(keys) <= limit {
		cand = slices.Clone(keys)
	} else {
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
