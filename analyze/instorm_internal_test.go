package analyze

import (
	"math/rand/v2"
	"testing"
)

// TestInStorm: the binary search of the joined storm windows answers as
// a scan of every window [StartNs, EndNs) does, for windows that overlap,
// touch, nest, are empty or stand alone.
func TestInStorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		var eps []Episode
		for range rng.IntN(12) {
			lo := rng.Int64N(1000)
			eps = append(eps, Episode{StartNs: lo, EndNs: lo + rng.Int64N(80)})
		}
		a := &analysis{}
		a.res.Episodes = eps
		for i := range a.res.Episodes {
			a.storms = append(a.storms, &a.res.Episodes[i])
		}
		a.stormSpans = stormWindows(a.storms)
		for x := int64(-5); x < 1100; x++ {
			want := false
			for _, e := range eps {
				if x >= e.StartNs && x < e.EndNs {
					want = true
				}
			}
			if got := a.inStorm(x); got != want {
				t.Fatalf("trial %d, windows %v: inStorm(%d) = %v, want %v", trial, eps, x, got, want)
			}
		}
	}
}
