// Package cache holds the small caches analyze's per-row loops look
// values up through: Dict, f of a string column's dictionary entries, and
// Recent, the values of the last processes seen.
package cache

import "github.com/umtrace/umtrace/ingest"

// Dict caches f of each dictionary entry that a string column's rows
// use, computed on first use: for a batch's own dictionary once per batch,
// for a shared one (ingest.SharedDict: nsys kernel names indexed by
// StringIds id) once per scan. A shared dictionary holds every string of
// the trace, millions of which a batch does not use, so nothing may walk
// the whole dictionary per batch.
type Dict[T any] struct {
	f      func(v string, shared bool) T
	id     uintptr
	shared bool
	vals   []T
	done   []bool
}

// NewDict returns a Dict of f.
func NewDict[T any](f func(v string, shared bool) T) *Dict[T] {
	return &Dict[T]{f: f}
}

// Batch prepares c for the batch whose column is s.
func (c *Dict[T]) Batch(s ingest.Strings) {
	n := s.DictLen()
	if c.shared && s.DictID() == c.id && len(c.vals) == n {
		return // the same shared dictionary as the last batch
	}
	c.id, c.shared = s.DictID(), s.Shared()
	if cap(c.vals) < n {
		c.vals, c.done = make([]T, n), make([]bool, n)
		return
	}
	c.vals, c.done = c.vals[:n], c.done[:n]
	clear(c.vals)
	clear(c.done)
}

// Get returns f of row i's string; ok is false for a null row.
func (c *Dict[T]) Get(s ingest.Strings, i int) (v T, ok bool) {
	k := s.Key(i)
	if k < 0 {
		return v, false
	}
	if !c.done[k] {
		c.vals[k], c.done[k] = c.f(s.DictValue(k), c.shared), true
	}
	return c.vals[k], true
}

// Recent holds the values of the last processes looked up, for the
// per-row lookups by process: a file holds a few processes (one per GPU),
// all of which fit, whatever their pids (a cache indexed by the pid's
// bits missed at every row when a job's pids, often a round number apart,
// shared entries: 4242 and 6242 in 16 entries by their low bits).
type Recent[T any] struct {
	pid  [8]int64
	v    [8]*T
	next int
}

// Get returns p's value, nil when p is not among the last eight.
func (r *Recent[T]) Get(p int64) *T {
	for i := range r.pid {
		if r.pid[i] == p && r.v[i] != nil {
			return r.v[i]
		}
	}
	return nil
}

// Put adds p's value, in place of the one put longest ago.
func (r *Recent[T]) Put(p int64, v *T) {
	r.pid[r.next], r.v[r.next] = p, v
	r.next = (r.next + 1) % len(r.pid)
}

// Shared reports whether the last batch's dictionary is shared
// (ingest.Strings.Shared).
func (c *Dict[T]) Shared() bool { return c.shared }
