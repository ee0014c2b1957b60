package par

import (
	"runtime"
	"sync"
	"testing"
)

// TestChunks: every index once, in contiguous chunks of at least minItems,
// as many as GOMAXPROCS allows.
func TestChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	for _, c := range []struct{ n, min, chunks int }{{0, 1, 1}, {10, 100, 1}, {100, 10, 8}, {1000, 300, 3}, {7, 1, 7}} {
		seen := make([]int, c.n)
		var mu sync.Mutex
		calls := 0
		Chunks(c.n, c.min, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if c.chunks > 1 && hi-lo < c.min {
				t.Errorf("n=%d: chunk [%d,%d) below %d items", c.n, lo, hi, c.min)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		if calls != c.chunks {
			t.Errorf("n=%d min=%d: %d chunks, want %d", c.n, c.min, calls, c.chunks)
		}
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d: index %d done %d times", c.n, i, s)
			}
		}
	}
}
