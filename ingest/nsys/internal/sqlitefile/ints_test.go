package sqlitefile

import (
	"database/sql"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIntsDecode compares the one-pass decode (ints) with header and
// columns on random records: every serial type, short records, columns
// read out of order, RowID and Null columns, a body that ends exactly
// where its buffer does (where ints cannot read 8 bytes from a value's
// start) and one with bytes after it.
func TestIntsDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var at0, ok0 int
	for range 4000 {
		ncols := 1 + rng.IntN(12)
		rec := randRecord(rng, ncols)
		cols := randCols(rng, ncols+3) // some past the record's end
		c := (*File)(nil).NewCursor(nil, cols)
		if c.slots == nil {
			t.Fatal("a cursor of integer columns has no one-pass plan")
		}
		c.maxCols = rng.IntN(ncols + 2) // 0: any; below ncols: corrupt
		// The second decode of each record finds the plan of the first;
		// plans of a cursor with other columns or maxCols do not hold.
		c.plans, c.lastPlan = nil, nil
		rowid := rng.Uint64N(1 << 40)
		for _, exact := range []bool{true, false} {
			buf := rec
			if exact {
				buf = slices.Clip(slices.Clone(rec))
			} else {
				buf = append(slices.Clone(rec), 1, 2, 3, 4, 5, 6, 7, 8)[:len(rec)]
			}
			want, wnulls, werr := c.slow(buf, rowid)
			got := make([]sql.NullInt64, len(cols))
			gnulls := make([]uint8, len(cols))
			gerr := c.ints(buf, rowid, got, gnulls)
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("record %x cols %+v: ints error %v, header and columns %v", rec, cols, gerr, werr)
			}
			if werr != nil {
				continue
			}
			if !slices.Equal(got, want) || !slices.Equal(gnulls, wnulls) {
				t.Fatalf("record %x cols %+v (exact %v):\nints    %v %v\ncolumns %v %v", rec, cols, exact, got, gnulls, want, wnulls)
			}
			if exact {
				at0++
			} else {
				ok0++
			}
		}
	}
	if at0 < 1000 || ok0 < 1000 {
		t.Fatalf("only %d and %d records decoded", at0, ok0)
	}
}

// slow decodes rec through header and columns.
func (c *Cursor) slow(rec []byte, rowid uint64) ([]sql.NullInt64, []uint8, error) {
	body, err := c.header(rec)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]sql.NullInt64, len(c.cols))
	nulls := make([]uint8, len(c.cols))
	c.columns(rowid, body, nil, rows, nulls, nil)
	return rows, nulls, nil
}

// randCols reads up to n distinct record columns (indexes below n) in a
// random order, with RowID and Null columns, defaults and IntOnly mixed.
func randCols(rng *rand.Rand, n int) []Column {
	var cols []Column
	for _, i := range rng.Perm(n)[:1+rng.IntN(n)] {
		col := Column{Index: i, IntOnly: rng.IntN(2) == 0, Default: rng.Int64N(100) - 50, DefaultNull: rng.IntN(3) == 0}
		switch rng.IntN(10) {
		case 0:
			col.Index = RowID
		case 1:
			col.Index = Null
		}
		cols = append(cols, col)
	}
	return cols
}

// randRecord is a record of n values of random serial types: integers of
// every size, reals, NaN, 0, 1, NULL, text and blobs, a reserved type now
// and then.
func randRecord(rng *rand.Rand, n int) []byte {
	var hdr, body []byte
	for range n {
		var typ uint64
		switch r := rng.IntN(14); {
		case r < 6:
			typ = uint64(1 + r)
			sz := smallSize[typ]
			v := rng.Uint64()
			body = binary.BigEndian.AppendUint64(body, v)[:len(body)+int(sz)]
		case r == 6:
			typ = 7
			f := rng.NormFloat64() * 1e12
			if rng.IntN(8) == 0 {
				f = math.NaN()
			}
			body = binary.BigEndian.AppendUint64(body, math.Float64bits(f))
		case r == 7, r == 8, r == 9:
			typ = uint64(r + 1) // 8, 9 and 10 (reserved)
			if rng.IntN(20) != 0 && typ == 10 {
				typ = 0
			}
		case r == 10:
			typ = 0
		default: // text or blob, some of digits
			s := [][]byte{[]byte(" -42x"), {0xff, 0x00}, {}, []byte("7")}[rng.IntN(4)]
			typ = uint64(12 + 2*len(s) + rng.IntN(2))
			body = append(body, s...)
		}
		hdr = appendSQLiteVarint(hdr, typ)
	}
	h := appendSQLiteVarint(nil, uint64(len(hdr)+1))
	if len(h) != 1 {
		panic("record header too long")
	}
	return append(append(h, hdr...), body...)
}

// appendSQLiteVarint appends v as SQLite's big-endian varint (up to 9
// bytes; these tests use small values).
func appendSQLiteVarint(b []byte, v uint64) []byte {
	var tmp []byte
	tmp = append(tmp, byte(v&0x7f))
	for v >>= 7; v > 0; v >>= 7 {
		tmp = append(tmp, byte(v&0x7f)|0x80)
	}
	slices.Reverse(tmp)
	return append(b, tmp...)
}
