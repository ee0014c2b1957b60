package cache

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
)

// TestDict computes f once per dictionary entry a batch uses, and again
// for the next batch's own dictionary.
func TestDict(t *testing.T) {
	calls := 0
	d := NewDict(func(v string, shared bool) int { calls++; return len(v) })
	b := ingest.NewBuilder(memory.DefaultAllocator, ingest.API)
	defer b.Release()
	b.Project([]string{ingest.ColName}) // the other columns all null
	name := ingest.API.Index(ingest.ColName)
	for _, v := range []string{"cudaMalloc", "cudaFree", "cudaMalloc"} {
		b.String(name, v)
		b.EndRow()
	}
	rec := b.NewBatch()
	defer rec.Release()
	s := ingest.Str(rec, ingest.API, ingest.ColName)
	for pass := 0; pass < 2; pass++ {
		d.Batch(s)
		for i, want := range []int{10, 8, 10} {
			if got, ok := d.Get(s, i); !ok || got != want {
				t.Fatalf("row %d: %d, %v; want %d", i, got, ok, want)
			}
		}
	}
	if calls != 4 || d.Shared() {
		t.Errorf("f called %d times (want 2 per batch dictionary, 4), shared %v", calls, d.Shared())
	}
}

// TestRecent keeps the last eight processes, whatever their pids (a job's
// pids are often a round number apart).
func TestRecent(t *testing.T) {
	var r Recent[int]
	vals := make([]int, 9)
	for i := range vals {
		r.Put(int64(i*1000), &vals[i])
	}
	if r.Get(0) != nil {
		t.Error("the first of nine is still cached")
	}
	for i := 1; i < 9; i++ {
		if r.Get(int64(i*1000)) != &vals[i] {
			t.Errorf("pid %d not cached", i*1000)
		}
	}
}
