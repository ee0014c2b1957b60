package nsys

import (
	"database/sql"
	"math"
	"slices"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// The block fillers: the page reader decodes rows a block at a time
// (fastRows), and for the large tables (API calls, kernels, copies and
// migrations, GPU page faults) a block whose rows are all plain (every
// check passes, no value that takes a row filler's rarer branch) goes
// into the batch's column buffers a column at a time (Builder.Int64s),
// where the row fillers make a call per value. A block that is not plain
// is declined before anything is appended and goes through the row
// filler; the batches are the same either way (TestBlockFill).

// A blockFunc fills n rows of a block, w values per row (row k's column c
// at v[k*w+c], as the row fillers take them), when all of them are plain;
// false when one is not, having appended nothing.
type blockFunc func(b *ingest.Builder, v []sql.NullInt64, n, w int, s *strs) bool

// blockFillers builds the block filler of the tables that have one.
var blockFillers = map[*ingest.Table]func(t *tableRead) blockFunc{
	ingest.API:      blockAPI,
	ingest.Kernel:   blockKernel,
	ingest.Memcpy:   blockMemcpy,
	ingest.GPUFault: blockGPUFault,
}

// addBlock fills rows of v (n rows of w values) through q's block filler,
// a batch's remaining room at a time, and emits each full batch. It
// returns the rows filled: fewer than n from the first stretch the filler
// declines (the caller reads the rest row by row).
func (q *query) addBlock(b *ingest.Builder, v []sql.NullInt64, n, w int, s *strs, emit func() error) (int, error) {
	done := 0
	for done < n {
		k := min(n-done, q.batchRows-b.Rows())
		if !q.block(b, v[done*w:(done+k)*w], k, w, s) {
			return done, nil
		}
		b.EndRows(k)
		done += k
		if b.Rows() >= q.batchRows {
			if err := emit(); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

// plainTimes reports whether every row's start and end (columns cs, ce)
// pass checks.times with an end: present, start not negative, end not
// before start, within the absolute bounds and the trace window.
func (t *tableRead) plainTimes(v []sql.NullInt64, n, w, cs, ce int) bool {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if win := t.ck.win; win != nil {
		lo, hi = win.lo, win.hi
	}
	for k := 0; k < n; k++ {
		s, e := v[k*w+cs], v[k*w+ce]
		if !s.Valid || !e.Valid || s.Int64 < 0 || e.Int64 < s.Int64 || e.Int64 >= maxTimeNs ||
			e.Int64-s.Int64 > maxSpanNs || s.Int64 < lo || e.Int64 > hi {
			return false
		}
	}
	return true
}

// plainRange reports whether column c's values are all within 0..its Hi
// (where enum and id pass them through).
func (t *tableRead) plainRange(v []sql.NullInt64, n, w, c int) bool {
	hi := t.rc[c].hi
	for k := 0; k < n; k++ {
		if x := v[k*w+c].Int64; x < 0 || x > hi {
			return false
		}
	}
	return true
}

// plainRefs reports whether column c's values (StringIds ids) all
// resolve; nullable: a NULL is plain too.
func plainRefs(v []sql.NullInt64, n, w, c int, s *strs, nullable bool) bool {
	for k := 0; k < n; k++ {
		x := v[k*w+c]
		if (!x.Valid && !nullable) || (x.Valid && !s.has(x.Int64)) {
			return false
		}
	}
	return true
}

// copyCol writes column c of the block to model column i.
func copyCol(b *ingest.Builder, i int, v []sql.NullInt64, n, w, c int) {
	if d := b.Int64s(i, n); d != nil {
		for k := range d {
			d[k] = v[k*w+c].Int64
		}
	}
}

// copyCol32 writes column c of the block to Int32 model column i.
func copyCol32(b *ingest.Builder, i int, v []sql.NullInt64, n, w, c int) {
	if d := b.Int32s(i, n); d != nil {
		for k := range d {
			d[k] = int32(v[k*w+c].Int64)
		}
	}
}

// pidCol writes the pid of column c (a globalPid or globalTid).
func pidCol(b *ingest.Builder, i int, v []sql.NullInt64, n, w, c int) {
	if d := b.Int64s(i, n); d != nil {
		for k := range d {
			d[k] = pid(v[k*w+c].Int64)
		}
	}
}

// corrCol is corr for a block's column c.
func corrCol(b *ingest.Builder, i int, v []sql.NullInt64, n, w, c int) {
	for k := 0; k < n; k++ {
		if x := v[k*w+c]; !x.Valid || x.Int64 == 0 {
			for k := 0; k < n; k++ {
				corr(b, i, v[k*w+c])
			}
			return
		}
	}
	copyCol(b, i, v, n, w, c)
}

// blockActivity is activity for a block: plain reports whether fill's
// checks pass on every row, fill then writes the columns.
func (a *activity) plain(v []sql.NullInt64, n, w int) bool {
	t := a.t
	return t.plainTimes(v, n, w, schema.ActStart, schema.ActEnd) && t.plainRange(v, n, w, schema.ActDeviceID) &&
		t.plainRange(v, n, w, schema.ActContextID) && t.plainRange(v, n, w, schema.ActStreamID)
}

func (a *activity) fillBlock(b *ingest.Builder, v []sql.NullInt64, n, w int) {
	copyCol(b, a.start, v, n, w, schema.ActStart)
	copyCol(b, a.end, v, n, w, schema.ActEnd)
	pidCol(b, a.pid, v, n, w, schema.ActGlobalPid)
	copyCol(b, a.dev, v, n, w, schema.ActDeviceID)
	copyCol(b, a.ctx, v, n, w, schema.ActContextID)
	copyCol(b, a.stream, v, n, w, schema.ActStreamID)
	corrCol(b, a.corr, v, n, w, schema.ActCorrelationID)
}

func blockAPI(t *tableRead) blockFunc {
	ix := t.ix
	cS, cE, cP, cT, cC, cEC, cN, cRN, cRV := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColCorrelationID), ix(ingest.ColEventClass), ix(ingest.ColName), ix(ingest.ColRawName), ix(ingest.ColReturnValue)
	var tab *strs
	rawOf := func(id int64) string { return tab.get(id) }
	nameOf := func(id int64) string { return StripVersion(tab.get(id)) }
	class := apiClass(t, nameOf)
	var ec []int32
	return func(b *ingest.Builder, v []sql.NullInt64, n, w int, s *strs) bool {
		if !t.plainTimes(v, n, w, schema.RuntimeStart, schema.RuntimeEnd) || !plainRefs(v, n, w, schema.RuntimeNameID, s, false) {
			return false
		}
		tab = s
		// An event class out of range is a warning: the row filler's.
		ec = slices.Grow(ec[:0], n)[:n]
		for k := range ec {
			c, ok := class(v[k*w : k*w+w])
			if !ok {
				return false
			}
			ec[k] = int32(c)
		}
		copyCol(b, cS, v, n, w, schema.RuntimeStart)
		copyCol(b, cE, v, n, w, schema.RuntimeEnd)
		pidCol(b, cP, v, n, w, schema.RuntimeGlobalTid)
		if d := b.Int64s(cT, n); d != nil {
			for k := range d {
				d[k] = tid(v[k*w+schema.RuntimeGlobalTid].Int64)
			}
		}
		corrCol(b, cC, v, n, w, schema.RuntimeCorrelationID)
		if d := b.Int32s(cEC, n); d != nil {
			copy(d, ec)
		}
		for k := 0; k < n; k++ {
			id := v[k*w+schema.RuntimeNameID].Int64
			b.StringID(cN, id, nameOf)
			b.StringID(cRN, id, rawOf)
		}
		copyCol32(b, cRV, v, n, w, schema.RuntimeReturnValue)
		return true
	}
}

func blockKernel(t *tableRead) blockFunc {
	ix := t.ix
	act := newActivity(t)
	cN, cSN, cNID := ix(ingest.ColName), ix(ingest.ColShortName), ix(ingest.ColNameID)
	dims := kernelDims(ix)
	var tab *strs
	strOf := func(id int64) string { return tab.get(id) }
	return func(b *ingest.Builder, v []sql.NullInt64, n, w int, s *strs) bool {
		if !act.plain(v, n, w) || !plainRefs(v, n, w, schema.KernelName, s, true) || !plainRefs(v, n, w, schema.KernelShortName, s, true) {
			return false
		}
		tab = s
		act.fillBlock(b, v, n, w)
		for k := 0; k < n; k++ {
			kernelNames(b, s, v[k*w+schema.KernelName], v[k*w+schema.KernelShortName], cN, cSN, cNID, strOf)
		}
		for _, d := range dims {
			copyCol32(b, d.model, v, n, w, d.col)
		}
		return true
	}
}

func blockMemcpy(t *tableRead) blockFunc {
	ix := t.ix
	act := newActivity(t)
	cB, cK, cSK, cDK, cMC, cVA, cCC := ix(ingest.ColBytes), ix(ingest.ColCopyKind), ix(ingest.ColSrcKind), ix(ingest.ColDstKind), ix(ingest.ColMigCause), ix(ingest.ColVirtAddr), ix(ingest.ColCopyCount)
	return func(b *ingest.Builder, v []sql.NullInt64, n, w int, _ *strs) bool {
		// Source and destination kinds go through nullEnum row by row,
		// which warns as the row filler does.
		if !act.plain(v, n, w) || !t.plainRange(v, n, w, schema.MemcpyCopyKind) {
			return false
		}
		for k := 0; k < n; k++ {
			kind := v[k*w+schema.MemcpyCopyKind].Int64
			if mc := v[k*w+schema.MemcpyMigrationCause]; kind >= 11 && kind <= 13 && mc.Valid && (mc.Int64 < 0 || mc.Int64 > t.rc[schema.MemcpyMigrationCause].hi) {
				return false
			}
		}
		act.fillBlock(b, v, n, w)
		copyCol(b, cB, v, n, w, schema.MemcpyBytes)
		copyCol32(b, cK, v, n, w, schema.MemcpyCopyKind)
		for k := 0; k < n; k++ {
			r := v[k*w : k*w+w]
			t.nullEnum(b, cSK, r[schema.MemcpySrcKind], schema.MemcpySrcKind)
			t.nullEnum(b, cDK, r[schema.MemcpyDstKind], schema.MemcpyDstKind)
			if kind, mc := r[schema.MemcpyCopyKind].Int64, r[schema.MemcpyMigrationCause]; kind >= 11 && kind <= 13 && mc.Valid {
				b.Int32(cMC, int32(mc.Int64))
			} else {
				b.Null(cMC)
			}
			if va := r[schema.MemcpyVirtualAddress]; va.Valid && va.Int64 != 0 {
				b.Uint64(cVA, uint64(va.Int64))
			} else {
				b.Null(cVA)
			}
		}
		if d := b.Int64s(cCC, n); d != nil {
			for k := range d {
				cc := v[k*w+schema.MemcpyCopyCount]
				if !cc.Valid || cc.Int64 <= 0 {
					cc.Int64 = 1
				}
				d[k] = cc.Int64
			}
		}
		return true
	}
}

func blockGPUFault(t *tableRead) blockFunc {
	ix := t.ix
	cS, cE, cP, cD, cA, cN, cAT := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColAddress), ix(ingest.ColNumFaults), ix(ingest.ColAccessType)
	return func(b *ingest.Builder, v []sql.NullInt64, n, w int, _ *strs) bool {
		if !t.plainTimes(v, n, w, schema.GPUFaultStart, schema.GPUFaultEnd) || !t.plainRange(v, n, w, schema.GPUFaultDeviceID) ||
			!t.plainRange(v, n, w, schema.GPUFaultAccessType) {
			return false
		}
		for k := 0; k < n; k++ {
			if x := v[k*w+schema.GPUFaultNumFaults]; x.Valid && x.Int64 < 0 {
				return false
			}
		}
		copyCol(b, cS, v, n, w, schema.GPUFaultStart)
		copyCol(b, cE, v, n, w, schema.GPUFaultEnd)
		pidCol(b, cP, v, n, w, schema.GPUFaultGlobalPid)
		copyCol(b, cD, v, n, w, schema.GPUFaultDeviceID)
		if d := b.Uint64s(cA, n); d != nil {
			for k := range d {
				d[k] = uint64(v[k*w+schema.GPUFaultAddress].Int64)
			}
		}
		if d := b.Int64s(cN, n); d != nil {
			for k := range d {
				x := v[k*w+schema.GPUFaultNumFaults]
				if !x.Valid {
					x.Int64 = 1
				}
				d[k] = x.Int64
			}
		}
		copyCol32(b, cAT, v, n, w, schema.GPUFaultAccessType)
		return true
	}
}
