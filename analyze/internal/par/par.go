// Package par splits loops across goroutines, for analyze and the
// packages under it.
package par

import (
	"runtime"
	"sync"
)

// Chunks runs fn over [0, n) in up to GOMAXPROCS contiguous chunks of at
// least minItems items concurrently, and waits for them; for loops whose
// iterations write only their own item (or whose chunks' results are
// joined after).
func Chunks(n, minItems int, fn func(lo, hi int)) {
	k := min(runtime.GOMAXPROCS(0), n/minItems)
	if k <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for j := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(n*j/k, n*(j+1)/k)
		}()
	}
	wg.Wait()
}
