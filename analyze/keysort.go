package analyze

import (
	"math/bits"
	"slices"
)

// sortByKey sorts s by key ascending and, among equal keys, by tie: the
// order slices.SortFunc gives with a comparator that compares key first
// (elements equal under both may come out in either order). It is an
// in-place most-significant-digit radix sort (American flag sort, 8 bits a
// pass, starting at the highest bit in which keys differ), with no second
// buffer: the lists it sorts (migrations, faults, host-blocking calls, GPU
// work) reach hundreds of MB, and on traces whose rows are not in time
// order comparison sorts of them were the largest part of the analysis
// after the read. Input already in order is only checked.
func sortByKey[T any](s []T, key func(*T) uint64, tie func(x, y T) int) {
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
	flagSort(s, key, tie, max(top-7, 0))
}

// flagSort sorts s, whose keys agree above bit shift+7, by the 8-bit
// digit at shift and then each digit's bucket by the bits below it.
func flagSort[T any](s []T, key func(*T) uint64, tie func(x, y T) int, shift int) {
	if len(s) <= 24 {
		insertionSort(s, key, tie)
		return
	}
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
	from := 0
	for _, n := range count {
		b := s[from : from+n]
		from += n
		switch {
		case n < 2:
		case shift == 0:
			slices.SortFunc(b, tie) // one key
		default:
			flagSort(b, key, tie, max(shift-8, 0))
		}
	}
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

// timeKey maps an int64 time to a uint64 of the same order.
func timeKey(t int64) uint64 { return uint64(t) ^ 1<<63 }
