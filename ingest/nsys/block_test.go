package nsys

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// TestBlockFill fills the same rows through the block fillers (with the
// row filler taking the rows they decline, as the page reader does) and
// through the row filler alone: the batches and the warnings must be the
// same. The rows are mostly plain, with blocks where some value takes a
// row filler's other branch: NULL, 0, -1, out of range, past the window,
// an id not in StringIds.
func TestBlockFill(t *testing.T) {
	sb := &strsBuilder{}
	for id := int64(1); id < 40; id++ { // 0 is not an id: a NULL read as 0 does not resolve
		sb.add(id, fmt.Sprintf("cuda%d_v%d", id, id%3))
	}
	sb.add(40, "cuLaunchKernel")
	s := sb.done()
	for tab, mk := range blockFillers {
		decl := schema.ForModel(tab)
		t.Run(tab.Name, func(t *testing.T) {
			w := len(decl.Cols)
			// Odd values in one column at a time (a block then holds one
			// or two: each check declines on its own), then anywhere.
			type round struct {
				col  int // -1: every column
				odd  float64
				kind int // the odd value (oddValue); -1: any
			}
			rounds := []round{{-1, 0, -1}, {-1, 0.01, -1}, {-1, 0.2, -1}}
			for c := 0; c < w; c++ {
				for k := range nOdd {
					rounds = append(rounds, round{c, 0.002, k})
				}
			}
			for _, rd := range rounds {
				odd := rd
				rng := rand.New(rand.NewPCG(uint64(w), uint64(rd.col+1)<<20|uint64(rd.kind+1)<<16|uint64(rd.odd*1e4)))
				n := 5*fastRows + 37
				v := make([]sql.NullInt64, n*w)
				for k := 0; k < n; k++ {
					row := v[k*w : k*w+w]
					for c := range row {
						row[c] = sql.NullInt64{Int64: plainValue(rng, decl, c), Valid: true}
					}
					// Times in order: a start, an end after it.
					if decl.Cols[1].Conv == schema.Time {
						row[1].Int64 = row[0].Int64 + rng.Int64N(1e6)
					}
					for c := range row {
						if (rd.col < 0 || rd.col == c) && rng.Float64() < rd.odd {
							row[c] = oddValue(rng, rd.kind)
						}
					}
				}
				for i, names := range [][]string{nil, {"NULL"}} { // every column; the lazy ones unselected
					win := &window{lo: 1000, hi: 1 << 40, what: "outside"}
					if i == 1 {
						win = nil // the absolute bounds alone
					}
					got, gotW, blockRows := fillBoth(t, tab, decl, s, mk, v, n, w, names, win, true)
					want, wantW, _ := fillBoth(t, tab, decl, s, mk, v, n, w, names, win, false)
					if rd.odd == 0 && blockRows != n {
						t.Errorf("plain rows: %d of %d through the block filler", blockRows, n)
					}
					if len(got) != len(want) {
						t.Fatalf("odd %v: %d batches through the block fillers, %d row by row", odd, len(got), len(want))
					}
					for i := range got {
						if !array.RecordEqual(got[i], want[i]) {
							t.Fatalf("odd %v: batch %d differs:\n%v\nrow by row:\n%v", odd, i, got[i], want[i])
						}
					}
					if fmt.Sprint(gotW) != fmt.Sprint(wantW) {
						t.Errorf("odd %v: warnings %v, row by row %v", odd, gotW, wantW)
					}
				}
			}
		})
	}
}

// fillBoth fills v's rows as pageRows.read does (block, when blocks is
// set, then rows) and returns the batches and the warnings by key.
func fillBoth(t *testing.T, tab *ingest.Table, decl *schema.Table, s *strs, mk func(*tableRead) blockFunc, v []sql.NullInt64, n, w int, lazyNull []string, win *window, blocks bool) (batches []arrow.RecordBatch, warnings map[warnKey]int64, blockRows int) {
	names := make([]string, len(decl.Cols))
	vals := v
	for i, c := range decl.Cols {
		names[i] = c.Name
		if lazyNull != nil && c.Lazy {
			names[i] = "NULL"
		}
	}
	if lazyNull != nil {
		vals = append([]sql.NullInt64(nil), v...)
		for k := 0; k < n; k++ {
			for i, c := range decl.Cols {
				if c.Lazy {
					vals[k*w+i] = sql.NullInt64{}
				}
			}
		}
	}
	ck := &checks{win: win}
	tr := newTableRead(decl, decl.Name, ck, tab.Index, names)
	q := query{fill: fillers[tab](tr), batchRows: 700, ck: ck, src: decl.Name}
	if blocks {
		q.block = mk(tr)
	}
	b := ingest.NewBuilder(memory.DefaultAllocator, tab)
	var out []arrow.RecordBatch
	emit := func() error { out = append(out, b.NewBatch()); return nil }
	t.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	for at := 0; at < n; at += fastRows {
		got := min(fastRows, n-at)
		blk := vals[at*w : (at+got)*w]
		i := 0
		if q.block != nil {
			var err error
			if i, err = q.addBlock(b, blk, got, w, s, emit); err != nil {
				t.Fatal(err)
			}
			blockRows += i
		}
		for ; i < got; i++ {
			if err := q.add(b, blk[i*w:i*w+w], nil, s, emit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b.Rows() > 0 {
		emit()
	}
	warns := map[warnKey]int64{}
	for k, a := range ck.m {
		warns[k] = a.n
	}
	return out, warns, blockRows
}

// plainValue is a value column c takes in most rows.
func plainValue(rng *rand.Rand, decl *schema.Table, c int) int64 {
	col := decl.Cols[c]
	switch col.Conv {
	case schema.Time:
		return 2000 + rng.Int64N(1e9)
	case schema.Enum, schema.ID:
		return rng.Int64N(min(col.Hi, 14) + 1)
	case schema.StringID:
		return 1 + rng.Int64N(40)
	}
	return rng.Int64N(1 << 40)
}

// nOdd is the number of kinds of oddValue.
const nOdd = 8

// oddValue is a value that takes some filler's rarer branch: of kind
// 0..nOdd-1, or any (-1).
func oddValue(rng *rand.Rand, kind int) sql.NullInt64 {
	if kind < 0 {
		kind = rng.IntN(nOdd)
	}
	switch kind {
	case 7:
		return sql.NullInt64{Int64: 1 << 55, Valid: true} // a span past the absolute bound
	case 0:
		return sql.NullInt64{}
	case 1:
		return sql.NullInt64{Valid: true}
	case 2:
		return sql.NullInt64{Int64: -1, Valid: true}
	case 3:
		return sql.NullInt64{Int64: 99, Valid: true} // out of most enums' range
	case 4:
		return sql.NullInt64{Int64: 1 << 41, Valid: true} // past the window; an unknown string id
	case 5:
		return sql.NullInt64{Int64: 500, Valid: true} // before the window
	}
	return sql.NullInt64{Int64: 1 << 62, Valid: true}
}
