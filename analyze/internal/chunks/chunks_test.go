package chunks

import (
	"slices"
	"testing"
)

// TestList pushes across block boundaries and reads the list back every
// way it can be read.
func TestList(t *testing.T) {
	var l List[int]
	var want []int
	for i := range 3*BlockLen + 17 {
		l.Push(i)
		want = append(want, i)
	}
	if l.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", l.Len(), len(want))
	}
	bs := l.Blocks()
	if len(bs[0]) != 64 || len(bs[len(bs)-2]) != BlockLen {
		t.Errorf("block lengths %d ... %d, want 64 ... %d", len(bs[0]), len(bs[len(bs)-2]), BlockLen)
	}
	for _, b := range bs {
		if cap(b) > BlockLen {
			t.Fatalf("a block of capacity %d > BlockLen", cap(b))
		}
	}
	if got := l.AppendTo(nil); !slices.Equal(got, want) {
		t.Fatal("AppendTo differs")
	}
	var s List[int]
	s.Share(&l)
	s.Share(&l)
	if s.Len() != 2*len(want) || !slices.Equal(s.AppendTo(nil), append(slices.Clone(want), want...)) {
		t.Fatal("Share differs")
	}
	if got := l.DrainFrom([]int{-1}, 1, 3); !slices.Equal(got, append([]int{-1}, want[64+3:]...)) {
		t.Fatal("DrainFrom differs")
	}
	if l.Len() != 0 || l.Blocks() != nil {
		t.Fatal("a drained list is not empty")
	}
	var nilList *List[int]
	if nilList.Len() != 0 || nilList.AppendTo(nil) != nil || nilList.DrainTo(nil) != nil {
		t.Fatal("a nil list is not empty")
	}
}

// TestTake: Take hands over the blocks in order and leaves the list empty.
func TestTake(t *testing.T) {
	var l List[int]
	for i := range 1000 {
		l.Push(i)
	}
	bs := l.Take()
	if l.Len() != 0 || len(l.Blocks()) != 0 {
		t.Fatalf("after Take: Len %d, %d blocks", l.Len(), len(l.Blocks()))
	}
	i := 0
	for _, b := range bs {
		for _, v := range b {
			if v != i {
				t.Fatalf("element %d is %d", i, v)
			}
			i++
		}
	}
	if i != 1000 {
		t.Fatalf("%d elements, want 1000", i)
	}
	var nilList *List[int]
	if nilList.Take() != nil {
		t.Fatal("Take of a nil list")
	}
}

// TestPushAll appends runs of every length across block boundaries: the
// blocks are those of one Push per element.
func TestPushAll(t *testing.T) {
	var one, all List[int]
	next := 0
	for run := 0; next < 3*BlockLen; run = (run*7 + 13) % 5000 {
		vs := make([]int, run)
		for i := range vs {
			vs[i] = next
			one.Push(next)
			next++
		}
		all.PushAll(vs)
	}
	if all.Len() != one.Len() {
		t.Fatalf("Len = %d, want %d", all.Len(), one.Len())
	}
	a, o := all.Blocks(), one.Blocks()
	if len(a) != len(o) {
		t.Fatalf("%d blocks, want %d", len(a), len(o))
	}
	for i := range o {
		if cap(a[i]) != cap(o[i]) || !slices.Equal(a[i], o[i]) {
			t.Fatalf("block %d: %d of cap %d, want %d of cap %d", i, len(a[i]), cap(a[i]), len(o[i]), cap(o[i]))
		}
	}
}
