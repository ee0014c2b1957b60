package synth

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// null marks a NULL value in a buffered row.
const null = math.MinInt64

// maxVars bounds the host parameters of one multi-row INSERT (SQLite's
// default SQLITE_MAX_VARIABLE_NUMBER is 32766).
const maxVars = 8192

// table buffers the rows of one nsys table and writes them in start
// order with a prepared multi-row INSERT.
type table struct {
	name    string
	cols    int
	textCol int // index of the one TEXT column, or -1

	// Rows of the current step, not yet sorted.
	vals  []int64
	texts []string
	// Sorted rows waiting for a full batch.
	out      []int64
	outTexts []string

	shuffle *rand.Rand // Shape.Shuffle: rows leave in random order

	batch int       // rows per INSERT
	stmt  *sql.Stmt // INSERT of batch rows, prepared lazily
	args  []any
	count int64
}

func newTable(name string, cols, textCol int) *table {
	b := maxVars / cols
	if b > 512 {
		b = 512
	}
	return &table{name: name, cols: cols, textCol: textCol, batch: b}
}

// add buffers one row; v must have t.cols values (the text column's is
// ignored) and v[0] must be the row's start.
func (t *table) add(v ...int64) {
	if len(v) != t.cols {
		panic(fmt.Sprintf("synth: %s row has %d values, want %d", t.name, len(v), t.cols))
	}
	t.vals = append(t.vals, v...)
}

// addText buffers one row with a text value.
func (t *table) addText(s string, v ...int64) {
	t.add(v...)
	t.texts = append(t.texts, s)
}

func insertSQL(name string, cols, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(name)
	b.WriteString(" VALUES ")
	one := "(" + strings.Repeat("?,", cols-1) + "?)"
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	return b.String()
}

// flush moves buffered rows that start before watermark, in start order,
// to the output and writes every full batch.
func (t *table) flush(ctx context.Context, conn *sql.Conn, watermark int64) error {
	if t.shuffle != nil {
		return t.flushShuffled(ctx, conn, watermark)
	}
	n := len(t.vals) / t.cols
	if n == 0 {
		return nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		sa, sb := t.vals[a*t.cols], t.vals[b*t.cols]
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	var keep []int64
	var keepTexts []string
	for _, i := range idx {
		row := t.vals[i*t.cols : (i+1)*t.cols]
		if row[0] >= watermark {
			keep = append(keep, row...)
			if t.textCol >= 0 {
				keepTexts = append(keepTexts, t.texts[i])
			}
			continue
		}
		t.out = append(t.out, row...)
		if t.textCol >= 0 {
			t.outTexts = append(t.outTexts, t.texts[i])
		}
	}
	t.vals = append(t.vals[:0], keep...)
	t.texts = append(t.texts[:0], keepTexts...)
	return t.writeBatches(ctx, conn)
}

// flushShuffled moves every buffered row to the output and, once it holds
// ShuffleRows rows (or at the end, watermark MaxInt64), shuffles it and
// writes every full batch.
func (t *table) flushShuffled(ctx context.Context, conn *sql.Conn, watermark int64) error {
	t.out = append(t.out, t.vals...)
	t.outTexts = append(t.outTexts, t.texts...)
	t.vals, t.texts = t.vals[:0], t.texts[:0]
	n := len(t.out) / t.cols
	if n < ShuffleRows && watermark != math.MaxInt64 {
		return nil
	}
	row := make([]int64, t.cols)
	for i := n - 1; i > 0; i-- {
		j := t.shuffle.IntN(i + 1)
		a, b := t.out[i*t.cols:(i+1)*t.cols], t.out[j*t.cols:(j+1)*t.cols]
		copy(row, a)
		copy(a, b)
		copy(b, row)
		if t.textCol >= 0 {
			t.outTexts[i], t.outTexts[j] = t.outTexts[j], t.outTexts[i]
		}
	}
	return t.writeBatches(ctx, conn)
}

// writeBatches writes every full batch of the output.
func (t *table) writeBatches(ctx context.Context, conn *sql.Conn) error {
	off := 0
	for len(t.out)/t.cols-off >= t.batch {
		if t.stmt == nil {
			st, err := conn.PrepareContext(ctx, insertSQL(t.name, t.cols, t.batch))
			if err != nil {
				return fmt.Errorf("preparing insert into %s: %w", t.name, err)
			}
			t.stmt = st
		}
		if err := t.exec(ctx, t.stmt, off, t.batch); err != nil {
			return err
		}
		off += t.batch
	}
	if off > 0 {
		t.out = t.out[:copy(t.out, t.out[off*t.cols:])]
		if t.textCol >= 0 {
			t.outTexts = t.outTexts[:copy(t.outTexts, t.outTexts[off:])]
		}
	}
	return nil
}

// exec writes output rows off..off+rows with st.
func (t *table) exec(ctx context.Context, st *sql.Stmt, off, rows int) error {
	nv := rows * t.cols
	if cap(t.args) < nv {
		t.args = make([]any, nv)
	}
	args := t.args[:nv]
	for i, v := range t.out[off*t.cols : off*t.cols+nv] {
		if v == null {
			args[i] = nil
		} else {
			args[i] = v
		}
	}
	if t.textCol >= 0 {
		for r := range rows {
			args[r*t.cols+t.textCol] = t.outTexts[off+r]
		}
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("inserting into %s: %w", t.name, err)
	}
	t.count += int64(rows)
	return nil
}

// close writes every remaining row and releases the statement.
func (t *table) close(ctx context.Context, conn *sql.Conn) error {
	if err := t.flush(ctx, conn, math.MaxInt64); err != nil {
		return err
	}
	if rest := len(t.out) / t.cols; rest > 0 {
		st, err := conn.PrepareContext(ctx, insertSQL(t.name, t.cols, rest))
		if err != nil {
			return fmt.Errorf("preparing insert into %s: %w", t.name, err)
		}
		err = t.exec(ctx, st, 0, rest)
		st.Close()
		t.out, t.outTexts = t.out[:0], t.outTexts[:0]
		if err != nil {
			return err
		}
	}
	if t.stmt != nil {
		t.stmt.Close()
		t.stmt = nil
	}
	return nil
}
