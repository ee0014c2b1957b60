package analyze

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByKey compares sortByKey with slices.SortFunc under the same
// order (key, then tie) on keys of several spreads, with many ties.
func TestSortByKey(t *testing.T) {
	type rec struct {
		k   int64
		tie int32
		id  int // distinguishes elements equal under the order
	}
	rng := rand.New(rand.NewPCG(9, 10))
	gens := map[string]func() int64{
		"times":    func() int64 { return 1_700_000_000_000_000_000 + rng.Int64N(1e10) },
		"negative": func() int64 { return rng.Int64N(1e6) - 5e5 },
		"few":      func() int64 { return rng.Int64N(4) },
		"wide":     func() int64 { return int64(rng.Uint64()) },
		"one":      func() int64 { return 42 },
	}
	key := func(r *rec) uint64 { return timeKey(r.k) }
	tie := func(x, y rec) int { return cmp.Compare(x.tie, y.tie) }
	order := func(x, y rec) int { return cmp.Or(cmp.Compare(x.k, y.k), tie(x, y)) }
	for name, gen := range gens {
		for _, n := range []int{0, 1, 50, 1000, 5000, 100000} {
			s := make([]rec, n)
			for i := range s {
				s[i] = rec{gen(), int32(rng.IntN(3)), i}
			}
			want := slices.Clone(s)
			slices.SortStableFunc(want, order)
			sortByKey(s, key, tie)
			if !slices.IsSortedFunc(s, order) {
				t.Fatalf("%s n=%d: not sorted", name, n)
			}
			// The same elements: sorted by order then id, both agree.
			byID := func(x, y rec) int { return cmp.Or(order(x, y), cmp.Compare(x.id, y.id)) }
			slices.SortFunc(s, byID)
			slices.SortFunc(want, byID)
			if !slices.Equal(s, want) {
				t.Fatalf("%s n=%d: the elements differ", name, n)
			}
		}
	}
}
