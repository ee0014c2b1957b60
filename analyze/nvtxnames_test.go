package analyze

import "testing"

// TestRangeNameTable: names kept as templates and digit runs come back as
// they went in (leading zeros, literal Ns, NULs, names of digits only),
// one id per distinct name, and a name's key is digitsToN of it.
func TestRangeNameTable(t *testing.T) {
	names := []string{
		"", "step", "step 1", "step 01", "step 10", "step N", "Nstep 7N", "123", "1", "a1b22c333",
		"layers.186724.self_attn[0042]", "x\x00y 5", "\x00", "nccl:all_reduce bucket 99998", "9a9",
		"aten::addmm(Tensor self, Scalar beta=1) -> Tensor [model.encoder.layers.105103.out_proj]",
	}
	tb := newRangeNameTable()
	ids := map[string]int32{}
	for round := 0; round < 2; round++ {
		for _, n := range names {
			id := tb.id(n)
			if prev, ok := ids[n]; ok && prev != id {
				t.Fatalf("%q: id %d, then %d", n, prev, id)
			}
			ids[n] = id
		}
	}
	if tb.Len() != len(names) {
		t.Fatalf("%d names, want %d", tb.Len(), len(names))
	}
	tb.done()
	for _, n := range names {
		id := ids[n]
		if got := tb.name(id); got != n {
			t.Errorf("name(%d) = %q, want %q", id, got, n)
		}
		for _, k := range []int{0, 1, 4, 7, 1000} {
			if got := tb.prefix(id, k); got != n[:min(k, len(n))] {
				t.Errorf("prefix(%q, %d) = %q", n, k, got)
			}
		}
		if got := tb.key(id); got != digitsToN(n) {
			t.Errorf("key(%q) = %q, want %q", n, got, digitsToN(n))
		}
	}
}

// TestRangeNameTableClashes: names whose first hashes agree (all of them
// here, then two values for all) still get one id each, told apart by
// their second hashes and found again through the probe chain, across
// the table's growth; a name never added is not found.
func TestRangeNameTableClashes(t *testing.T) {
	for _, hashOf := range []func(i int) uint64{
		func(int) uint64 { return 0xdeadbeef_00000007 },
		func(i int) uint64 { return uint64(i%2) << 40 },
	} {
		tb := newRangeNameTable()
		const n = 3000
		name := func(i int) string { return "layer " + string(rune('a'+i%26)) + " " + itoa(i) }
		for round := 0; round < 2; round++ {
			for i := range n {
				if id := tb.idHashed(name(i), hashOf(i), 0); id != int32(i) {
					t.Fatalf("round %d: %q got id %d, want %d", round, name(i), id, i)
				}
			}
		}
		for i := range n {
			var h2, h2x uint64
			if id, _ := tb.find(name(i), hashOf(i), &h2); id != int32(i) {
				t.Fatalf("find(%q) = %d, want %d", name(i), id, i)
			}
			if id, _ := tb.find(name(i)+"x", hashOf(i), &h2x); id != -1 {
				t.Fatalf("find of a name never added: %d", id)
			}
		}
		if tb.Len() != n {
			t.Fatalf("%d names, want %d", tb.Len(), n)
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
