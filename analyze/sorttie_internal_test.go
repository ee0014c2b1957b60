package analyze

import (
	"reflect"
	"slices"
	"testing"
)

// TestRecordTiesTotal: the records' sorts are radix.SortTotal's, whose
// result is the same on any number of goroutines only where two records
// equal under key and tie are equal. For each field of each record, a
// record that differs from the zero one in that field alone must differ
// from it under key or tie (a call's fields that the analysis fills after
// the sort aside): a field added to a record must be added to its tie.
func TestRecordTiesTotal(t *testing.T) {
	check(t, callKey, callTie, "overlap", "stream", "waited", "stall")
	check(t, gfaultKey, gfaultTie)
	check(t, cfaultKey, cfaultTie)
	var cls migClasses
	zero := cls.make(0, 0, 0, 0, 0, 0, 0)
	check(t, migrationKey, cls.tie)
	// A migration's class stands for fields too: one of a class that
	// differs in one of them alone must differ under the tie.
	names, classes := oneOff[migClass](t)
	for i, k := range classes {
		x := cls.make(0, 0, 0, k.pid, k.kind, k.cause, uint64(k.addrHi)<<migAddrBits)
		if cls.tie(x, zero) == 0 {
			t.Errorf("migClass.%s: a migration whose class differs only in it is equal under the sort's key and tie", names[i])
		}
	}
}

func check[T any](t *testing.T, key func(*T) uint64, tie func(x, y T) int, filledLater ...string) {
	t.Helper()
	var zero T
	names, vs := oneOff[T](t, filledLater...)
	for i, x := range vs {
		if key(&x) == key(&zero) && tie(x, zero) == 0 {
			t.Errorf("%T.%s: a record that differs only in it is equal under the sort's key and tie", zero, names[i])
		}
	}
}

// oneOff returns, for each field of T but those filled later, its name
// and a T that differs from the zero one in that field alone.
func oneOff[T any](t *testing.T, filledLater ...string) (names []string, vs []T) {
	t.Helper()
	var zero T
	typ := reflect.TypeOf(zero)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if slices.Contains(filledLater, f.Name) {
			continue
		}
		var x T
		v := reflect.ValueOf(&x).Elem().Field(i)
		v = reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem() // unexported
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(1)
		default:
			t.Errorf("%s.%s: a %s field; teach the test to set it", typ.Name(), f.Name, v.Kind())
			continue
		}
		names, vs = append(names, f.Name), append(vs, x)
	}
	return names, vs
}
