package analyze

import (
	"slices"
	"testing"
)

// TestMigClasses: a migration's process, direction, cause and address come
// back from its class whatever the address (above 2^44 and 2^63 too) and
// however many classes (past migScan the table looks them up in a map);
// retag moves a batch's migrations to the collector's classes; a class
// past maxMigClasses marks the table full.
func TestMigClasses(t *testing.T) {
	type fields struct {
		pid         int32
		kind, cause int8
		addr        uint64
	}
	var want []fields
	for i := range 3 * migScan {
		want = append(want, fields{pid: int32(1000 + i%7), kind: int8(11 + i%3), cause: int8(i%7 - 1), addr: uint64(i) << 40})
	}
	want = append(want, fields{pid: 1, kind: 11, cause: 2, addr: 0x7fff_ffff_f000}, fields{pid: 1, kind: 11, cause: 2, addr: 1<<63 | 0x1234},
		fields{pid: 1 << 24, kind: 13, cause: -1, addr: 0})
	var batch, whole migClasses
	whole.make(0, 0, 0, 99, 12, 1, 0) // a class the batch has not got: its indexes differ
	ms := make([]migration, len(want))
	for i, f := range want {
		ms[i] = batch.make(int64(i), uint32(i), uint32(2*i), f.pid, f.kind, f.cause, f.addr)
	}
	check := func(name string, cls *migClasses) {
		t.Helper()
		for i, f := range want {
			m := &ms[i]
			k := cls.of(m)
			got := fields{k.pid, k.kind, k.cause, cls.addr(m)}
			if got != f || m.start != int64(i) || m.dur != uint32(i) || m.bytes != uint32(2*i) {
				t.Errorf("%s: migration %d: %+v (start %d, dur %d, bytes %d), want %+v", name, i, got, m.start, m.dur, m.bytes, f)
			}
		}
	}
	check("batch", &batch)
	if len(batch.list) <= migScan || batch.ids == nil {
		t.Fatalf("%d classes, map %v: the test should pass migScan", len(batch.list), batch.ids != nil)
	}
	ids := make([]uint32, len(batch.list))
	for i, k := range batch.list {
		ids[i] = whole.id(k)
	}
	retag(ms, ids)
	check("after retag", &whole)
	if whole.full || batch.full {
		t.Error("full after a few classes")
	}

	full := migClasses{list: make([]migClass, maxMigClasses), ids: map[migClass]uint32{}}
	if id := full.id(migClass{pid: 5}); id != 0 || !full.full || len(full.list) != maxMigClasses {
		t.Errorf("class %d past the last: id %d, full %v, %d classes", maxMigClasses, id, full.full, len(full.list))
	}
}

// TestMigAggMerge: migrations aggregated in parts and merged give the
// aggregates of one pass over them all, kinds and causes outside the
// small array included.
func TestMigAggMerge(t *testing.T) {
	var cls migClasses
	var ms []migration
	for i := range 5000 {
		ms = append(ms, cls.make(int64(i), uint32(i%97), uint32(i%4096), 7, int8(10+i%4), int8((i/4)%20-1), uint64(i)<<12))
	}
	whole := newMigAgg()
	for i := range ms {
		whole.add(&ms[i], &cls)
	}
	merged := newMigAgg()
	for lo := 0; lo < len(ms); lo += 777 {
		part := newMigAgg()
		for i := lo; i < min(lo+777, len(ms)); i++ {
			part.add(&ms[i], &cls)
		}
		merged.merge(part)
	}
	if got, want := merged.list(), whole.list(); !slices.Equal(got, want) {
		t.Errorf("merged parts: %+v\nwant %+v", got, want)
	}
	if len(whole.m) < 40 {
		t.Fatalf("%d aggregates: the test should cover more kinds and causes", len(whole.m))
	}
}
