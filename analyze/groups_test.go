package analyze

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestGroupsTopN compares groups, which picks its top groups by total
// before summarizing, with summarizing every group, sorting and cutting.
func TestGroupsTopN(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := map[string][]int64{}
	for i := range 3000 {
		k := fmt.Sprintf("g%d", i%700)
		m[k] = append(m[k], int64(rng.IntN(50)))
	}
	m["tie-a"], m["tie-b"] = []int64{5000, 1}, []int64{5001} // equal totals: by key
	for _, limit := range []int{0, 1, 10, 699, 5000} {
		var want []Group
		for k, ds := range m {
			want = append(want, Group{Key: k, Dist: summarize(slices.Clone(ds))})
		}
		slices.SortFunc(want, func(x, y Group) int { return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(x.Key, y.Key)) })
		if limit > 0 && len(want) > limit {
			want = want[:limit]
		}
		if got := groups(m, limit); !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d: %d groups differ from summarize-all (%d)", limit, len(got), len(want))
		}
	}
}
