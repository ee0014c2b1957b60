package analyze

import (
	"slices"
	"testing"
)

// TestMarkProcs: split's per-record process marks give each process its
// own records in order, the same as filtering by pid, leave records of
// processes outside the list to none, and are not made for 255 or more
// processes (split then filters by pid).
func TestMarkProcs(t *testing.T) {
	c := newCollector()
	pids := []int64{10, 20, 30}
	for i, p := range []int64{20, 10, 99, 30, 20, 20, 10, 99, 30} {
		c.calls = append(c.calls, call{start: int64(i), pid: p})
		c.gfaults = append(c.gfaults, gfault{start: int64(i), pid: int32(p)})
		c.migrations = append(c.migrations, c.migClasses.make(int64(i), 0, 0, int32(p), 11, 2, 0))
	}
	o := c.markProcs(pids)
	if o == nil {
		t.Fatal("no marks for 3 processes")
	}
	for k, p := range pids {
		if got, want := take(c.calls, &o.calls, k), filterByPid(c.calls, p, func(x *call) int64 { return x.pid }); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("pid %d calls: %v, want %v", p, got, want)
		}
		if got, want := take(c.gfaults, &o.gfaults, k), filterByPid(c.gfaults, p, func(x *gfault) int64 { return int64(x.pid) }); !slices.Equal(got, want) {
			t.Errorf("pid %d faults: %v, want %v", p, got, want)
		}
		if got, want := take(c.migrations, &o.migrations, k), filterByPid(c.migrations, p, func(x *migration) int64 { return int64(c.migClasses.of(x).pid) }); !slices.Equal(got, want) {
			t.Errorf("pid %d migrations: %v, want %v", p, got, want)
		}
	}
	if n := o.calls.count[0] + o.calls.count[1] + o.calls.count[2]; n != len(c.calls)-2 {
		t.Errorf("%d calls marked to a process, want %d (pid 99 is none)", n, len(c.calls)-2)
	}
	// A file of too many processes for the marks has each process's
	// made alone at its split.
	one := c.markProcs([]int64{20})
	if got, want := take(c.calls, &one.calls, 0), filterByPid(c.calls, 20, func(x *call) int64 { return x.pid }); !slices.Equal(got, want) {
		t.Errorf("one process's marks: calls %v, want %v", got, want)
	}
	many := make([]int64, 255)
	for i := range many {
		many[i] = int64(i)
	}
	if c.markProcs(many) != nil {
		t.Error("marks made for 255 processes")
	}
}

// TestRecentPids: the per-row cache by process holds the last eight
// processes whatever their pids (a job's pids are often a round number
// apart: 4242 and 6242 shared an entry of a cache indexed by low bits).
func TestRecentPids(t *testing.T) {
	var b byPid[int]
	pids := []int64{4242, 5242, 6242, 7242, 0, -1, 1 << 40, 16}
	for round := 0; round < 2; round++ {
		for i, p := range pids {
			v := b.get(p)
			if round == 0 {
				*v = i + 1
			} else if *v != i+1 {
				t.Errorf("pid %d: value %d, want %d", p, *v, i+1)
			}
		}
	}
	for _, p := range pids {
		if b.cache.Get(p) == nil {
			t.Errorf("pid %d not in the cache after the other seven", p)
		}
	}
	if b.cache.Get(99) != nil || len(b.m) != len(pids) {
		t.Errorf("cache has pid 99, or the map %d entries (want %d)", len(b.m), len(pids))
	}
	for _, k := range []streamKey{{-1, -1}, {0, 0}, {1 << 40, 7}, {4242, 13}} {
		if s := k.slot(6); s < 0 || s >= 64 {
			t.Errorf("slot(%v) = %d", k, s)
		}
	}
}

// filterByPid is the reference for take: the elements of s whose pid is
// p, in order.
func filterByPid[T any](s []T, p int64, pid func(*T) int64) []T {
	n := 0
	for i := range s {
		if pid(&s[i]) == p {
			n++
		}
	}
	out := make([]T, 0, n)
	for i := range s {
		if pid(&s[i]) == p {
			out = append(out, s[i])
		}
	}
	return out
}
