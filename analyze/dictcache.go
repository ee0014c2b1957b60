package analyze

import "github.com/umtrace/umtrace/ingest"

// dictCache caches f of each dictionary entry that a string column's rows
// use, computed on first use: for a batch's own dictionary once per batch,
// for a shared one (ingest.SharedDict: nsys kernel names indexed by
// StringIds id) once per scan. A shared dictionary holds every string of
// the trace, millions of which a batch does not use, so nothing may walk
// the whole dictionary per batch.
type dictCache[T any] struct {
	f      func(v string, shared bool) T
	id     uintptr
	shared bool
	vals   []T
	done   []bool
}

func newDictCache[T any](f func(v string, shared bool) T) *dictCache[T] {
	return &dictCache[T]{f: f}
}

// batch prepares c for the batch whose column is s.
func (c *dictCache[T]) batch(s ingest.Strings) {
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

// get returns f of row i's string; ok is false for a null row.
func (c *dictCache[T]) get(s ingest.Strings, i int) (v T, ok bool) {
	k := s.Key(i)
	if k < 0 {
		return v, false
	}
	if !c.done[k] {
		c.vals[k], c.done[k] = c.f(s.DictValue(k), c.shared), true
	}
	return c.vals[k], true
}
