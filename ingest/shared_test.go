package ingest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDictIndex: a batch whose string column indexes one SharedDict has it
// as its dictionary (Shared, same DictID in every batch); a batch that
// mixes it with other values gets a dictionary of its own holding the
// same strings.
func TestDictIndex(t *testing.T) {
	data := []byte("alphabetagamma")
	sd := NewSharedDict(data, []int32{0, 5, 9, 14})
	b := NewBuilder(memory.DefaultAllocator, Thread)
	defer b.Release()
	row := func(f func()) {
		b.Int64(0, 1)
		b.Int64(1, 2)
		f()
		b.EndRow()
	}
	row(func() { b.DictIndex(2, sd, 2) })
	row(func() { b.Null(2) })
	row(func() { b.DictIndex(2, sd, 0) })
	r1 := b.NewBatch()
	defer r1.Release()
	row(func() { b.DictIndex(2, sd, 1) })
	r2 := b.NewBatch()
	defer r2.Release()
	row(func() { b.DictIndex(2, sd, 1) })
	row(func() { b.String(2, "delta") })
	row(func() { b.DictIndex(2, sd, 2) })
	row(func() { b.Null(2) })
	r3 := b.NewBatch()
	defer r3.Release()
	s1, s2, s3 := Str(r1, Thread, ColName), Str(r2, Thread, ColName), Str(r3, Thread, ColName)
	if !s1.Shared() || !s2.Shared() || s1.DictID() != s2.DictID() || s1.DictLen() != 3 {
		t.Fatalf("shared batches: %v %v, dictionaries %x %x of %d", s1.Shared(), s2.Shared(), s1.DictID(), s2.DictID(), s1.DictLen())
	}
	if s3.Shared() || s3.DictID() == s1.DictID() || s3.DictLen() != 3 {
		t.Fatalf("mixed batch: shared %v, %d entries", s3.Shared(), s3.DictLen())
	}
	var got []string
	for _, s := range []Strings{s1, s2, s3} {
		for i := range s.Len() {
			got = append(got, s.Value(i))
		}
	}
	want := []string{"gamma", "", "alpha", "beta", "beta", "delta", "gamma", ""}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if s1.Key(1) != -1 || s3.Key(3) != -1 {
		t.Fatal("nulls have keys")
	}
}
