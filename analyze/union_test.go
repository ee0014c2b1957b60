package analyze

import (
	"slices"
	"testing"
)

// TestFaultUnion: a process's GPU fault groups and demand migrations merge
// into disjoint spans (a prefetch does not count, an empty fault group
// counts as 1 ns); a process whose own analysis gave its union keeps it.
func TestFaultUnion(t *testing.T) {
	gf := []gfault{{start: 0, end: 10, pid: 1}, {start: 5, end: 20, pid: 1}, {start: 100, end: 100, pid: 1}, {start: 0, end: 50, pid: 2}}
	mig := []migration{
		{start: 15, dur: 15, pid: 1, kind: 11, cause: 2}, // page fault: joins [0,20)
		{start: 40, dur: 10, pid: 1, kind: 11, cause: 1}, // user prefetch: not demand
		{start: 60, dur: 5, pid: 1, kind: 11, cause: 3},  // speculative prefetch: demand
		{start: 200, dur: 5, pid: 2, kind: 11, cause: 2}, // pid 2's union was given
	}
	given := map[int64][]span{2: {{7, 8}}}
	u := faultUnion(gf, mig, given)
	if want := []span{{0, 30}, {60, 65}, {100, 101}}; !slices.Equal(u[1], want) {
		t.Errorf("pid 1: %v, want %v", u[1], want)
	}
	if !slices.Equal(u[2], given[2]) || len(u) != 2 {
		t.Errorf("pid 2: %v (want the given %v), %d processes", u[2], given[2], len(u))
	}
}
