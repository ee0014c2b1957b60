// Package radix holds analyze's radix sorts: SortByKey, an in-place
// most-significant-digit sort of records by a 64-bit key, and Uints, a
// least-significant-digit sort of unsigned integers with a second buffer,
// which Floats and the API duration samples use. The lists they sort
// (migrations, faults, host-blocking calls, GPU work, per-call durations)
// reach hundreds of MB; comparison sorts of them were the largest part of
// an analysis after the read.
package radix

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// parallelMin is the fewest elements per goroutine: a sort of fewer than
// twice as many runs on the caller's alone.
const parallelMin = 1 << 16

// workers is how many goroutines sort n elements: one per parallelMin, at
// most GOMAXPROCS. The result does not depend on it.
func workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n/parallelMin)) }

// SortByKey sorts s by key ascending and, among equal keys, by tie: the
// order slices.SortFunc gives with a comparator that compares key first
// (elements equal under both may come out in either order). It is an
// in-place most-significant-digit radix sort (American flag sort, 8 bits a
// pass, starting at the highest bit in which keys differ), with no second
// buffer. Input already in order is only checked.
func SortByKey[T any](s []T, key func(*T) uint64, tie func(x, y T) int) {
	sortByKey(s, key, tie, workers(len(s)), false)
}

// SortTotal is SortByKey where elements equal under key and tie are
// equal (tie orders any two that differ), so that no order of them can
// be told from another: its first pass may then run on all the sort's
// goroutines, through a buffer as long as s (scatterSort), where
// SortByKey's in-place pass runs on one.
func SortTotal[T any](s []T, key func(*T) uint64, tie func(x, y T) int) {
	sortByKey(s, key, tie, workers(len(s)), true)
}

// sortByKey is SortByKey on w goroutines: after the first pass the digit
// buckets are independent, and w goroutines take them in turn. total is
// SortTotal's promise.
func sortByKey[T any](s []T, key func(*T) uint64, tie func(x, y T) int, w int, total bool) {
	// Keys are taken from elements in place: key(&x) of a copy x would
	// move the copy to the heap, an allocation per comparison.
	sorted := true
	for i := 1; i < len(s); i++ {
		if kp, k := key(&s[i-1]), key(&s[i]); kp > k || (kp == k && tie(s[i-1], s[i]) > 0) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	if len(s) <= 24 {
		insertionSort(s, key, tie)
		return
	}
	if total && w >= scatterMin {
		scatterSort(s, key, tie, w)
		return
	}
	lo, hi := key(&s[0]), key(&s[0])
	for i := range s {
		k := key(&s[i])
		lo, hi = min(lo, k), max(hi, k)
	}
	if lo == hi {
		slices.SortFunc(s, tie)
		return
	}
	top := 63 - bits.LeadingZeros64(lo^hi) // the highest bit that differs
	shift := max(top-7, 0)
	if w <= 1 {
		flagSort(s, key, tie, shift)
		return
	}
	count := flagPass(s, key, shift)
	var starts [257]int
	for d, n := range count {
		starts[d+1] = starts[d] + n
	}
	sortBuckets(s, &starts, key, tie, shift, w)
}

// scatterMin is the fewest goroutines for which SortTotal's first pass
// runs on them all, through a second buffer as long as s: the in-place
// pass is serial, and with 16 goroutines it was most of a sort of 1.3M
// migrations. With fewer (two cores), memory counts more than the pass.
const scatterMin = 4

// scatterSort is sortByKey on w goroutines from the first pass on: each
// takes a chunk of s, finds its keys' range and counts its digits, then
// moves its elements to their digits' buckets in a buffer (a chunk's
// elements of a digit after those of the chunks before it), and the
// buckets are sorted there and copied back.
func scatterSort[T any](s []T, key func(*T) uint64, tie func(x, y T) int, w int) {
	w = min(w, len(s)) // no chunk empty
	chunk := func(j int) []T { return s[len(s)*j/w : len(s)*(j+1)/w] }
	los, his := make([]uint64, w), make([]uint64, w)
	each(w, func(j int) {
		c := chunk(j)
		lo, hi := key(&c[0]), key(&c[0])
		for i := range c {
			k := key(&c[i])
			lo, hi = min(lo, k), max(hi, k)
		}
		los[j], his[j] = lo, hi
	})
	lo, hi := slices.Min(los), slices.Max(his)
	if lo == hi {
		slices.SortFunc(s, tie)
		return
	}
	top := 63 - bits.LeadingZeros64(lo^hi)
	shift := max(top-7, 0)
	counts := make([][256]int, w)
	each(w, func(j int) {
		c := chunk(j)
		for i := range c {
			counts[j][key(&c[i])>>shift&0xff]++
		}
	})
	var starts [257]int
	next := make([][256]int, w)
	for d := range 256 {
		at := starts[d]
		for j := range w {
			next[j][d] = at
			at += counts[j][d]
		}
		starts[d+1] = at
	}
	buf := make([]T, len(s))
	each(w, func(j int) {
		c, nx := chunk(j), &next[j]
		for i := range c {
			d := key(&c[i]) >> shift & 0xff
			buf[nx[d]] = c[i]
			nx[d]++
		}
	})
	sortBuckets(buf, &starts, key, tie, shift, w)
	each(w, func(j int) { copy(chunk(j), buf[len(s)*j/w:len(s)*(j+1)/w]) })
}

// each runs fn(0) to fn(w-1) on w goroutines and waits for them.
func each(w int, fn func(j int)) {
	var wg sync.WaitGroup
	for j := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(j)
		}()
	}
	wg.Wait()
}

// SortBlocksByKey puts the elements of blocks into dst (exactly as long
// as all of them) sorted as SortByKey sorts them, without first copying
// them in order: the first digit pass moves each element from its block
// straight to its digit's bucket in dst, and sets each block to nil once
// moved (so that a caller who holds no other reference frees it).
func SortBlocksByKey[T any](dst []T, blocks [][]T, key func(*T) uint64, tie func(x, y T) int) {
	sortBlocksByKey(dst, blocks, key, tie, workers(len(dst)))
}

func sortBlocksByKey[T any](dst []T, blocks [][]T, key func(*T) uint64, tie func(x, y T) int, w int) {
	n := 0
	var lo, hi uint64
	for _, b := range blocks {
		for i := range b {
			k := key(&b[i])
			if n == 0 {
				lo, hi = k, k
			}
			lo, hi = min(lo, k), max(hi, k)
			n++
		}
	}
	if n != len(dst) {
		panic("radix: SortBlocksByKey: dst is not as long as the blocks")
	}
	if n <= 24 || lo == hi {
		at := 0
		for i, b := range blocks {
			at += copy(dst[at:], b)
			blocks[i] = nil
		}
		sortByKey(dst, key, tie, w, false)
		return
	}
	top := 63 - bits.LeadingZeros64(lo^hi)
	shift := max(top-7, 0)
	var count [256]int
	for _, b := range blocks {
		for i := range b {
			count[key(&b[i])>>shift&0xff]++
		}
	}
	var starts [257]int
	for d, c := range count {
		starts[d+1] = starts[d] + c
	}
	next := starts
	for j, b := range blocks {
		for i := range b {
			d := key(&b[i]) >> shift & 0xff
			dst[next[d]] = b[i]
			next[d]++
		}
		blocks[j] = nil
	}
	sortBuckets(dst, &starts, key, tie, shift, w)
}

// sortBuckets sorts each of s's 256 digit buckets (s[starts[d]:starts[d+1]],
// the elements of digit d at shift) by the bits below shift, on w
// goroutines that take them in turn.
func sortBuckets[T any](s []T, starts *[257]int, key func(*T) uint64, tie func(x, y T) int, shift, w int) {
	if w <= 1 {
		for d := range 256 {
			sortBucket(s[starts[d]:starts[d+1]], key, tie, shift)
		}
		return
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := int(next.Add(1)) - 1; d < 256; d = int(next.Add(1)) - 1 {
				sortBucket(s[starts[d]:starts[d+1]], key, tie, shift)
			}
		}()
	}
	wg.Wait()
}

// flagSort sorts s, whose keys agree above bit shift+7, by the 8-bit
// digit at shift and then each digit's bucket by the bits below it.
func flagSort[T any](s []T, key func(*T) uint64, tie func(x, y T) int, shift int) {
	if len(s) <= 24 {
		insertionSort(s, key, tie)
		return
	}
	count := flagPass(s, key, shift)
	from := 0
	for _, n := range count {
		sortBucket(s[from:from+n], key, tie, shift)
		from += n
	}
}

// sortBucket sorts b, the elements of one digit at shift, by the bits
// below it.
func sortBucket[T any](b []T, key func(*T) uint64, tie func(x, y T) int, shift int) {
	switch {
	case len(b) < 2:
	case shift == 0:
		slices.SortFunc(b, tie) // one key
	default:
		flagSort(b, key, tie, max(shift-8, 0))
	}
}

// flagPass moves each element of s to its digit's bucket (the digit at
// shift), buckets in digit order, and returns their sizes.
func flagPass[T any](s []T, key func(*T) uint64, shift int) [256]int {
	var count [256]int
	for i := range s {
		count[key(&s[i])>>shift&0xff]++
	}
	var next, end [256]int
	at := 0
	for d, n := range count {
		next[d] = at
		at += n
		end[d] = at
	}
	for d := range 256 {
		for next[d] < end[d] {
			e := int(key(&s[next[d]]) >> shift & 0xff)
			if e == d {
				next[d]++
				continue
			}
			s[next[d]], s[next[e]] = s[next[e]], s[next[d]]
			next[e]++
		}
	}
	return count
}

// insertionSort sorts a short s by key, then tie.
func insertionSort[T any](s []T, key func(*T) uint64, tie func(x, y T) int) {
	for i := 1; i < len(s); i++ {
		kv := key(&s[i]) // before the copy: &v would move v to the heap
		v := s[i]
		j := i
		for ; j > 0; j-- {
			kp := key(&s[j-1])
			if kp < kv || (kp == kv && tie(s[j-1], v) <= 0) {
				break
			}
			s[j] = s[j-1]
		}
		s[j] = v
	}
}

// TimeKey maps an int64 time to a uint64 of the same order.
func TimeKey(t int64) uint64 { return uint64(t) ^ 1<<63 }

// digitBits is the width of Uints' digits: 3 passes for 32-bit values, 6
// for 64-bit ones, each histogram small enough for the L1 cache.
const digitBits = 11

// Uints sorts a ascending, using b (at least as long) as the second
// buffer, 11 bits a pass from the lowest, skipping digits every value
// shares; it reports whether the result is in a (else it is in b[:len(a)]).
func Uints[K uint32 | uint64](a, b []K) (inA bool) {
	return uints(a, b, workers(len(a)))
}

// uints is Uints on w goroutines: each pass, each takes a w-th of the
// values, counts their digits, and moves them to where the digits'
// totals and the parts before it put them (the order of a pass on one).
func uints[K uint32 | uint64](a, b []K, w int) (inA bool) {
	if len(a) == 0 {
		return true
	}
	passes := (int(unsafe.Sizeof(a[0]))*8 + digitBits - 1) / digitBits
	var hist [6][1 << digitBits]int
	for _, v := range a {
		for p := 0; p < passes; p++ {
			hist[p][v>>(p*digitBits)&(1<<digitBits-1)]++
		}
	}
	src, dst := a, b[:len(a)]
	inA = true
	for p := 0; p < passes; p++ {
		h := &hist[p]
		if h[src[0]>>(p*digitBits)&(1<<digitBits-1)] == len(a) {
			continue // every value has this digit
		}
		if w > 1 {
			scatter(src, dst, p*digitBits, w)
			src, dst = dst, src
			inA = !inA
			continue
		}
		sum := 0
		for i, c := range h {
			h[i] = sum
			sum += c
		}
		for _, v := range src {
			d := v >> (p * digitBits) & (1<<digitBits - 1)
			dst[h[d]] = v
			h[d]++
		}
		src, dst = dst, src
		inA = !inA
	}
	return inA
}

// scatter is one pass of uints on w goroutines: src's values to dst,
// stably by their digit at shift.
func scatter[K uint32 | uint64](src, dst []K, shift, w int) {
	n := len(src)
	per := (n + w - 1) / w
	hs := make([][1 << digitBits]int, w)
	each := func(fn func(k int, part []K)) {
		var wg sync.WaitGroup
		for k := range w {
			lo, hi := min(k*per, n), min((k+1)*per, n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(k, src[lo:hi])
			}()
		}
		wg.Wait()
	}
	each(func(k int, part []K) {
		h := &hs[k]
		for _, v := range part {
			h[v>>shift&(1<<digitBits-1)]++
		}
	})
	// Part k's values of digit d go after every value of a lower digit
	// and after parts 0..k-1's values of d.
	sum := 0
	for d := range 1 << digitBits {
		for k := range w {
			c := hs[k][d]
			hs[k][d] = sum
			sum += c
		}
	}
	each(func(k int, part []K) {
		h := &hs[k]
		for _, v := range part {
			d := v >> shift & (1<<digitBits - 1)
			dst[h[d]] = v
			h[d]++
		}
	})
}

// Floats sorts f in place, as slices.Sort does for values without NaN:
// short slices by slices.Sort, longer ones by Uints on keys of the IEEE
// bits (math.Float64bits) with the same order (made in place and turned back after), so
// durations sort in a few linear passes instead of n log n comparisons.
// scratch, if long enough, is used as the second buffer.
func Floats(f, scratch []float64) {
	n := len(f)
	if n < 1<<12 {
		slices.Sort(f)
		return
	}
	if len(scratch) < n {
		scratch = make([]float64, n)
	}
	u := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(f))), n)
	s := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(scratch))), n)
	for i, b := range u {
		if b>>63 != 0 {
			u[i] = ^b
		} else {
			u[i] = b | 1<<63
		}
	}
	if !Uints(u, s) {
		copy(u, s)
	}
	for i, k := range u {
		if k>>63 != 0 {
			u[i] = k &^ (1 << 63)
		} else {
			u[i] = ^k
		}
	}
}
