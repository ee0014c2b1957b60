package analyze

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
)

// TestCallsOf: every field of a callRec reaches its call's field of the
// same name (a field added to callRec and not copied fails here), in
// order, across blocks.
func TestCallsOf(t *testing.T) {
	names, recs := oneOff[callRec](t)
	var l chunks.List[callRec]
	for range 1000 { // several blocks
		l.PushAll(recs)
	}
	calls := callsOf(&l)
	if len(calls) != 1000*len(recs) || l.Len() != 0 {
		t.Fatalf("%d calls from %d records; %d left in the list", len(calls), 1000*len(recs), l.Len())
	}
	for i, c := range calls {
		k := i % len(recs)
		want := reflect.ValueOf(recs[k]).FieldByName(names[k])
		got := reflect.ValueOf(c).FieldByName(names[k])
		if !got.IsValid() {
			t.Fatalf("call has no field %s", names[k])
		}
		if got.Kind() != want.Kind() || !reflect.DeepEqual(asInt(got), asInt(want)) {
			t.Fatalf("call %d: %s is %v, want %v", i, names[k], got, want)
		}
	}
}

// TestCallsOfOrder: the calls come out in the records' order across
// blocks copied on several goroutines.
func TestCallsOfOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	var l chunks.List[callRec]
	const n = 3*chunks.BlockLen + 77
	for i := range n {
		l.Push(callRec{start: int64(i), end: int64(i) + 1})
	}
	calls := callsOf(&l)
	if len(calls) != n {
		t.Fatalf("%d calls from %d records", len(calls), n)
	}
	for i, c := range calls {
		if c.start != int64(i) || c.end != int64(i)+1 {
			t.Fatalf("call %d is record %d", i, c.start)
		}
	}
}

// asInt is v's value as an int64 (bools as 0 or 1).
func asInt(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint())
	}
	return v.Int()
}
