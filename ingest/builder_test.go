package ingest

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestStringViews: String may be given views of a buffer the caller
// overwrites right after (the page reader's pages): every batch keeps the
// values as they were appended, through arena chunks reused from one
// batch to the next, values longer than a chunk and empty ones.
func TestStringViews(t *testing.T) {
	b := NewBuilder(memory.DefaultAllocator, Thread)
	defer b.Release()
	buf := make([]byte, 0, 1<<20)
	long := strings.Repeat("x", arenaChunk+17)
	var want [][]string
	var recs []arrow.RecordBatch
	for batch := 0; batch < 4; batch++ {
		var ws []string
		for i := 0; i < 3000; i++ {
			v := strings.Repeat(string(rune('a'+(i+batch)%26)), i%300) + string(rune('A'+batch))
			switch {
			case i == 7:
				v = long
			case i == 11:
				v = ""
			case i%5 == 0 && i > 0:
				v = ws[i/2] // a repeat: the dictionary's existing entry
			}
			buf = append(buf[:0], v...)
			view := unsafe.String(unsafe.SliceData(buf), len(buf))
			b.Int64(0, 1)
			b.Int64(1, int64(i))
			b.String(2, view)
			b.EndRow()
			clear(buf[:len(v)]) // the caller's buffer is overwritten
			for j := range buf[:len(v)] {
				buf[j] = '#'
			}
			ws = append(ws, v)
		}
		want = append(want, ws)
		recs = append(recs, b.NewBatch())
	}
	for k, r := range recs {
		s := Str(r, Thread, ColName)
		for i, w := range want[k] {
			if got := s.Value(i); got != w {
				t.Fatalf("batch %d row %d: %.40q (len %d), want %.40q (len %d)", k, i, got, len(got), w, len(w))
			}
		}
		if s.DictLen() >= len(want[k]) {
			t.Errorf("batch %d: %d dictionary entries for %d rows with repeats", k, s.DictLen(), len(want[k]))
		}
		r.Release()
	}
}

// TestPooledDictionaries: a released builder's dictionaries serve the next
// builder (dictPool); nothing of the first builder's batch shows through,
// neither its strings nor its StringID cache (an id names another string
// in another table).
func TestPooledDictionaries(t *testing.T) {
	for round := 0; round < 20; round++ {
		b := NewBuilder(memory.DefaultAllocator, Thread)
		want := make([]string, 0, 300)
		for i := 0; i < 300; i++ {
			id := int64(i % 37)
			name := func(id int64) string { return strings.Repeat("n", int(id)) + string(rune('a'+round)) }
			b.Int64(0, 1)
			b.Int64(1, int64(i))
			b.StringID(2, id, name)
			b.EndRow()
			want = append(want, name(id))
		}
		r := b.NewBatch()
		b.Release()
		s := Str(r, Thread, ColName)
		for i, w := range want {
			if got := s.Value(i); got != w {
				t.Fatalf("round %d row %d: %q, want %q", round, i, got, w)
			}
		}
		if n := s.DictLen(); n != 37 {
			t.Errorf("round %d: %d dictionary entries, want 37", round, n)
		}
		r.Release()
	}
}
