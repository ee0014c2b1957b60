package intern

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
)

// TestLazyDedupe interns shared-dictionary strings unlooked-up
// (lazy) with repeats, and a copied string the usual way, and requires
// dedupe to send every id to the first id with its string.
func TestLazyDedupe(t *testing.T) {
	in := New()
	first := in.ID("c") // copied: through the map
	in.lazy = true
	var ids []int32
	for _, s := range []string{"a", "b", "a", "c", "b", "d"} {
		ids = append(ids, in.Intern(s, true))
	}
	canon := in.Dedupe()
	if canon == nil {
		t.Fatal("dedupe found no repeats")
	}
	want := []int32{first, 1, 2, 1, first, 2, 6}
	if !slices.Equal(canon, want) {
		t.Fatalf("canon %v, want %v (ids %v)", canon, want, ids)
	}
	if in.Dedupe() != nil {
		t.Error("second dedupe: nothing new was added")
	}
	// No repeats: nil.
	in2 := New()
	in2.lazy = true
	for _, s := range []string{"x", "y", "z"} {
		in2.Intern(s, true)
	}
	if canon := in2.Dedupe(); canon != nil {
		t.Errorf("distinct names: canon %v", canon)
	}
}

// TestIDs: equal strings get equal dense ids, also after the arena is
// replaced, and read back by Name and At.
func TestIDs(t *testing.T) {
	in := New()
	big := strings.Repeat("k", arenaBytes/3)
	words := []string{"cudaMalloc", "", big + "1", big + "2", big + "3", big + "4", "cudaFree"}
	for round := 0; round < 2; round++ {
		for i, w := range words {
			if id := in.ID(strings.Clone(w)); id != int32(i) {
				t.Fatalf("round %d: %q has id %d, want %d", round, w[:min(len(w), 12)], id, i)
			}
		}
	}
	for i, w := range words {
		if in.Name(int32(i)) != w || in.At(int32(i)) != w {
			t.Errorf("id %d does not read back", i)
		}
	}
	if in.Len() != len(words) {
		t.Errorf("Len %d, want %d", in.Len(), len(words))
	}
}

// fakeNames is an ingest.NameTable of literal strings.
type fakeNames struct {
	ingest.Source
	s     map[int64]string
	reads int
}

func (f *fakeNames) NameIDs(*ingest.Table) bool { return true }
func (f *fakeNames) Names(ids []int64) ([]string, error) {
	f.reads++
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = f.s[id]
	}
	return out, nil
}
func (f *fakeNames) NameFlags(int64) ingest.NameFlag { return 0 }

// TestByID: a Table of source ids gives them dense ids in the order first
// seen, large ones too (through SIDKey's keys, then KeyIDs), and reads
// their strings only when asked, once each.
func TestByID(t *testing.T) {
	src := &fakeNames{s: map[int64]string{7: "gemm", 1 << 40: "far", 3: "copy"}}
	n := NameTable(src)
	in := New()
	in.ByID(n)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{7, 1 << 40, 7, 3, 1<<26 - 1}, nil)
	b.AppendNull()
	col := b.NewInt64Array()
	defer col.Release()
	var keys []int32
	for i := range col.Len() {
		keys = append(keys, in.SIDKey(col, i))
	}
	ids := in.KeyIDs()
	var got []int32
	for _, k := range keys {
		got = append(got, KeyID(ids, k))
	}
	if !slices.Equal(got, []int32{0, 1, 0, 2, 3, -1}) || in.Len() != 4 || in.SID(1) != 1<<40 || in.SID(3) != 1<<26-1 {
		t.Fatalf("keys %v, ids %v, %d names, SID(1) %d", keys, got, in.Len(), in.SID(1))
	}
	if src.reads != 0 {
		t.Fatal("names read before they were asked for")
	}
	src.s[1<<26-1] = "last"
	in.Resolve([]int32{0, 1, 2})
	if in.Name(0) != "gemm" || in.Name(1) != "far" || in.Name(2) != "copy" || src.reads != 1 || n.Err() != nil {
		t.Errorf("names %q %q %q after %d reads (%v)", in.Name(0), in.Name(1), in.Name(2), src.reads, n.Err())
	}
}
