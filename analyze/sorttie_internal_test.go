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
	check(t, migrationKey, migrationTie)
}

func check[T any](t *testing.T, key func(*T) uint64, tie func(x, y T) int, filledLater ...string) {
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
		if key(&x) == key(&zero) && tie(x, zero) == 0 {
			t.Errorf("%s.%s: a record that differs only in it is equal under the sort's key and tie", typ.Name(), f.Name)
		}
	}
}
