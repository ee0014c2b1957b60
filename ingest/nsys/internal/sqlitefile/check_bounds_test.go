package sqlitefile

import (
	"math/rand/v2"
	"testing"
)

// TestLeafBounds compares leafBounds, built by several with calls (pages
// out of order, repeated within a call and across calls), with a map
// written in the same order.
func TestLeafBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var lb leafBounds
	want := map[uint32]bound{}
	for call := range 30 {
		var pages []uint32
		var bs []bound
		for range rng.IntN(400) {
			p := uint32(rng.IntN(3000) + 1)
			b := bound{lo: rng.Int64N(1e6) - 5e5, hi: rng.Int64N(1e6), child: rng.IntN(2) == 0}
			pages, bs = append(pages, p), append(bs, b)
			want[p] = b
		}
		lb = lb.with(pages, bs)
		if len(lb.pages) != len(want) {
			t.Fatalf("call %d: %d pages, want %d", call, len(lb.pages), len(want))
		}
		for p, b := range want {
			if got, ok := lb.get(p); !ok || got != b {
				t.Fatalf("call %d: page %d: %+v %v, want %+v", call, p, got, ok, b)
			}
		}
	}
	if _, ok := lb.get(5000); ok {
		t.Error("a page never added has a bound")
	}
	// Dropping pages (some twice, some never added) leaves the others'.
	var gone []uint32
	for p := range want {
		if rng.IntN(3) == 0 {
			gone = append(gone, p, p)
		}
	}
	gone = append(gone, 5000, 7000)
	lb = lb.without(gone)
	for _, p := range gone {
		delete(want, p)
	}
	if len(lb.pages) != len(want) || len(want) == 0 {
		t.Fatalf("after without: %d pages, want %d", len(lb.pages), len(want))
	}
	for p, b := range want {
		if got, ok := lb.get(p); !ok || got != b {
			t.Fatalf("after without: page %d: %+v %v, want %+v", p, got, ok, b)
		}
	}
	for _, p := range gone {
		if _, ok := lb.get(p); ok {
			t.Errorf("page %d dropped but still has a bound", p)
		}
	}
}
