package analyze

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopByTotal: the first limit keys by total (descending) then name are
// those of a full sort, with many ties at the boundary; only keys that can
// be among them are named or resolved.
func TestTopByTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 3, 50, 2000} {
		for _, limit := range []int{0, 1, 5, 10} {
			keys := make([]int32, n)
			totals := map[int32]int64{}
			for i := range keys {
				keys[i] = int32(i)
				totals[int32(i)] = int64(rng.IntN(8)) // few distinct totals: ties
			}
			name := func(k int32) string { return fmt.Sprintf("k%05d", (k*7919)%10007) }
			var named int
			counted := func(k int32) string { named++; return name(k) }
			var resolved []int32
			got := topByTotal(keys, func(k int32) int64 { return totals[k] }, limit, counted, func(ks []int32) { resolved = append(resolved, ks...) })
			want := slices.Clone(keys)
			slices.SortFunc(want, func(x, y int32) int {
				return cmp.Or(cmp.Compare(totals[y], totals[x]), cmp.Compare(name(x), name(y)))
			})
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d limit=%d: got %v, want %v", n, limit, got, want)
			}
			if limit > 0 && n > limit {
				th := totals[want[len(want)-1]]
				for _, k := range resolved {
					if totals[k] < th {
						t.Fatalf("n=%d limit=%d: resolved %d (total %d) below the boundary %d", n, limit, k, totals[k], th)
					}
				}
			}
		}
	}
}
