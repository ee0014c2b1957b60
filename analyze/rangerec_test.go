package analyze

import "testing"

// TestRangeRecords: ranges kept in 16 bytes give back their start, end,
// process and name: long ones (past 2^32-1 ns), an end before its start,
// null names, and names shared by processes, whatever order they come in.
func TestRangeRecords(t *testing.T) {
	c := &collector{}
	type in struct {
		s, e     int64
		proc, id int32
	}
	ins := []in{
		{100, 200, 0, 3},
		{150, 150 + 5_000_000_000, 0, 3}, // 5 s
		{300, 400, 1, 3},                 // the same name, another process
		{500, 499, 0, 3},                 // an end before the start
		{600, 700, 0, -1},
		{650, 800, 1, -1},
		{700, 700 + 1<<32 - 2, 1, 7}, // the longest short one
		{710, 710 + 1<<32 - 1, 1, 7}, // the shortest long one
		{720, 900, 0, 3},
		{730, 950, 1, 3},
	}
	var rs []rangeRec
	for _, x := range ins {
		rs = append(rs, c.newRange(x.s, x.e, c.rangeKeyOf(x.proc, x.id)))
	}
	for i, x := range ins {
		w := c.wide(&rs[i])
		if w != (nvtxRange{start: x.s, end: x.e, proc: x.proc, nameID: x.id}) {
			t.Errorf("range %d: %+v, want %+v", i, w, x)
		}
		if c.rangeNameID(&rs[i]) != x.id {
			t.Errorf("range %d: name %d, want %d", i, c.rangeNameID(&rs[i]), x.id)
		}
	}
	if rs[0].key != rs[8].key || rs[2].key != rs[9].key || rs[0].key == rs[2].key {
		t.Errorf("keys %d %d %d %d: one per (process, name)", rs[0].key, rs[8].key, rs[2].key, rs[9].key)
	}
	if rs[6].dur == longRange || rs[7].dur != longRange || rs[1].dur != longRange || rs[3].dur != longRange {
		t.Errorf("long marks: %d %d %d %d", rs[6].dur, rs[7].dur, rs[1].dur, rs[3].dur)
	}
}
