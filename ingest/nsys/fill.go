package nsys

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// The row fillers turn one row's values, selected as schema declares the
// table, into a row of its ingest table. Values are read by the table's
// column constants (schema.RuntimeStart, ...), range checks take their
// bounds from the declaration.

// A fillFunc fills one row; false leaves the row out.
type fillFunc func(b *ingest.Builder, v []sql.NullInt64, sv []sql.NullString, s *strs) bool

// tableRead is what a filler knows of the table it reads: the declaration,
// the export's table, and the checks of the scan part.
type tableRead struct {
	decl  *schema.Table
	src   string
	ck    *checks
	names []string // the name each integer column is read by ("NULL": the table lacks it)
	ix    func(string) int
	rc    []rangeCheck // each integer column's range check
}

// rangeCheck is one column's range check, from its declaration.
type rangeCheck struct {
	enumCol, idCol string // the column's name in warnings
	hi, unknown    int64
}

func newTableRead(decl *schema.Table, src string, ck *checks, ix func(string) int, names []string) *tableRead {
	t := &tableRead{decl: decl, src: src, ck: ck, ix: ix, names: names, rc: make([]rangeCheck, len(decl.Cols))}
	for i := range decl.Cols {
		d := &decl.Cols[i]
		// Ids are named by the name the table has them under (the GPU
		// table's id or deviceId), enums by the declared one.
		id := d.Name
		if t.has(i) {
			id = names[i]
		}
		t.rc[i] = rangeCheck{enumCol: d.Name, idCol: id, hi: d.Hi, unknown: d.Unknown}
	}
	return t
}

// has reports whether the table has column c (by one of its names).
func (t *tableRead) has(c int) bool { return t.names[c] != "NULL" }

// enum range-checks the value of enum column c (schema.Enum).
func (t *tableRead) enum(c int, v int64) int64 {
	if r := &t.rc[c]; v >= 0 && v <= r.hi {
		return v
	}
	return t.badEnum(c, v)
}

func (t *tableRead) badEnum(c int, v int64) int64 {
	r := &t.rc[c]
	return t.ck.enum(t.src, r.enumCol, v, r.hi, r.unknown)
}

// id range-checks the value of id column c (schema.ID).
func (t *tableRead) id(c int, v int64) int64 {
	if r := &t.rc[c]; v >= 0 && v <= r.hi {
		return v
	}
	return t.badID(c, v)
}

func (t *tableRead) badID(c int, v int64) int64 {
	r := &t.rc[c]
	return t.ck.id(t.src, r.idCol, v, r.hi+1)
}

// fillers builds each table's filler.
var fillers = map[*ingest.Table]func(t *tableRead) fillFunc{
	ingest.API:      fillAPI,
	ingest.Kernel:   fillKernel,
	ingest.Memcpy:   fillMemcpy,
	ingest.Memset:   fillMemset,
	ingest.Sync:     fillSync,
	ingest.GPUFault: fillGPUFault,
	ingest.CPUFault: fillCPUFault,
	ingest.NVTX:     fillNVTX,
	ingest.MemUsage: fillMemUsage,
	ingest.Thread:   fillThread,
	ingest.GPU:      fillGPU,
}

func pid(g int64) int64 { return (g >> 24) & 0xFFFFFF }
func tid(g int64) int64 { return g & 0xFFFFFF }

// corr appends a correlation id (schema.Corr): 0 and NULL are null.
func corr(b *ingest.Builder, i int, v sql.NullInt64) {
	if !v.Valid || v.Int64 == 0 {
		b.Null(i)
	} else {
		b.Int64(i, v.Int64)
	}
}

// nullEnum appends a nullable enum column c to model column i.
func (t *tableRead) nullEnum(b *ingest.Builder, i int, v sql.NullInt64, c int) {
	if v.Valid {
		b.Int32(i, int32(t.enum(c, v.Int64)))
	} else {
		b.Null(i)
	}
}

// activity fills the columns GPU activity tables begin with
// (schema.ActStart to schema.ActCorrelationID); it reports whether the
// row's times are usable.
type activity struct {
	t                         *tableRead
	start, end, pid, dev, ctx int
	stream, corr              int
}

func newActivity(t *tableRead) activity {
	ix := t.ix
	return activity{t, ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID),
		ix(ingest.ColContextID), ix(ingest.ColStreamID), ix(ingest.ColCorrelationID)}
}

func (a *activity) fill(b *ingest.Builder, v []sql.NullInt64) bool {
	t := a.t
	if !t.ck.times(t.src, v[schema.ActStart], v[schema.ActEnd], true) {
		return false
	}
	b.Int64(a.start, v[schema.ActStart].Int64)
	b.Int64(a.end, v[schema.ActEnd].Int64)
	b.Int64(a.pid, pid(v[schema.ActGlobalPid].Int64))
	b.Int64(a.dev, t.id(schema.ActDeviceID, v[schema.ActDeviceID].Int64))
	b.Int64(a.ctx, t.id(schema.ActContextID, v[schema.ActContextID].Int64))
	b.Int64(a.stream, t.id(schema.ActStreamID, v[schema.ActStreamID].Int64))
	corr(b, a.corr, v[schema.ActCorrelationID])
	return true
}

func fillAPI(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cS, cE, cP, cT, cC, cEC, cN, cRN, cRV := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColCorrelationID), ix(ingest.ColEventClass), ix(ingest.ColName), ix(ingest.ColRawName), ix(ingest.ColReturnValue)
	var tab *strs
	rawOf := func(id int64) string { return tab.get(id) }
	nameOf := func(id int64) string { return StripVersion(tab.get(id)) }
	plainClass := apiClass(t, nameOf)
	classHi := t.decl.Cols[schema.RuntimeEventClass].Hi
	class := func(v []sql.NullInt64) int64 {
		c, ok := plainClass(v)
		if !ok {
			ck.bad(src, "eventClass", v[schema.RuntimeEventClass].Int64, fmt.Sprintf("values outside 0..%d, read from the API name", classHi))
			c = nameClass(plainClass, v)
		}
		return c
	}
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
		if !ck.times(src, v[schema.RuntimeStart], v[schema.RuntimeEnd], true) {
			return false
		}
		tab = s
		nameID, gtid := v[schema.RuntimeNameID].Int64, v[schema.RuntimeGlobalTid].Int64
		ck.ref(s, src, "nameId", nameID)
		b.Int64(cS, v[schema.RuntimeStart].Int64)
		b.Int64(cE, v[schema.RuntimeEnd].Int64)
		b.Int64(cP, pid(gtid))
		b.Int64(cT, tid(gtid))
		corr(b, cC, v[schema.RuntimeCorrelationID])
		b.Int32(cEC, int32(class(v)))
		b.StringID(cN, nameID, nameOf)
		b.StringID(cRN, nameID, rawOf)
		b.Int32(cRV, int32(v[schema.RuntimeReturnValue].Int64))
		return true
	}
}

// apiClass returns a call's event class: its column, else (NULL) cu*
// calls that are not cuda* are the driver API's. ok is false for a value
// out of range (the caller warns, and reads the class from the name with
// nameClass).
func apiClass(t *tableRead, nameOf func(int64) string) func(v []sql.NullInt64) (class int64, ok bool) {
	hasClass := t.has(schema.RuntimeEventClass)
	classHi := t.decl.Cols[schema.RuntimeEventClass].Hi
	stripped := map[int64]bool{} // by name id: a driver API call
	return func(v []sql.NullInt64) (int64, bool) {
		ec, nameID := v[schema.RuntimeEventClass], v[schema.RuntimeNameID].Int64
		if hasClass && ec.Valid {
			if ec.Int64 >= 0 && ec.Int64 <= classHi {
				return ec.Int64, true
			}
			return 0, false
		}
		driver, ok := stripped[nameID]
		if !ok {
			name := nameOf(nameID)
			driver = strings.HasPrefix(name, "cu") && !strings.HasPrefix(name, "cuda")
			stripped[nameID] = driver
		}
		if driver {
			return 1, true
		}
		return 0, true
	}
}

// nameClass is the event class of a call whose column is out of range:
// read from its name, as for a NULL.
func nameClass(class func(v []sql.NullInt64) (int64, bool), v []sql.NullInt64) int64 {
	r := [schema.RuntimeReturnValue + 1]sql.NullInt64{}
	copy(r[:], v)
	r[schema.RuntimeEventClass] = sql.NullInt64{}
	c, _ := class(r[:])
	return c
}

// kernelDims are the kernel table's launch dimensions: source column,
// model column.
func kernelDims(ix func(string) int) []struct{ col, model int } {
	return []struct{ col, model int }{
		{schema.KernelGridX, ix(ingest.ColGridX)}, {schema.KernelGridY, ix(ingest.ColGridY)}, {schema.KernelGridZ, ix(ingest.ColGridZ)},
		{schema.KernelBlockX, ix(ingest.ColBlockX)}, {schema.KernelBlockY, ix(ingest.ColBlockY)}, {schema.KernelBlockZ, ix(ingest.ColBlockZ)},
	}
}

// kernelNames appends a kernel's name and short name (StringIds ids) to
// model columns cN and cSN, and its canonical name id to cNID.
func kernelNames(b *ingest.Builder, s *strs, name, short sql.NullInt64, cN, cSN, cNID int, strOf func(int64) string) {
	s.column(b, cN, name.Int64, strOf)
	s.column(b, cSN, short.Int64, strOf)
	if name.Valid && s.indexed {
		b.Int64(cNID, s.canonical(name.Int64))
	} else {
		b.Null(cNID)
	}
}

func fillKernel(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	act := newActivity(t)
	cN, cSN, cNID := ix(ingest.ColName), ix(ingest.ColShortName), ix(ingest.ColNameID)
	dims := kernelDims(ix)
	nameCol := t.names[schema.KernelName] // demangledName, else shortName
	var tab *strs
	strOf := func(id int64) string { return tab.get(id) }
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
		if !act.fill(b, v) {
			return false
		}
		tab = s
		name, short := v[schema.KernelName], v[schema.KernelShortName]
		if name.Valid {
			ck.ref(s, src, nameCol, name.Int64)
		}
		if short.Valid {
			ck.ref(s, src, "shortName", short.Int64)
		}
		kernelNames(b, s, name, short, cN, cSN, cNID, strOf)
		for _, d := range dims {
			b.Int32(d.model, int32(v[d.col].Int64))
		}
		return true
	}
}

func fillMemcpy(t *tableRead) fillFunc {
	ix := t.ix
	act := newActivity(t)
	cB, cK, cSK, cDK, cMC, cVA, cCC := ix(ingest.ColBytes), ix(ingest.ColCopyKind), ix(ingest.ColSrcKind), ix(ingest.ColDstKind), ix(ingest.ColMigCause), ix(ingest.ColVirtAddr), ix(ingest.ColCopyCount)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
		if !act.fill(b, v) {
			return false
		}
		b.Int64(cB, v[schema.MemcpyBytes].Int64)
		kind := t.enum(schema.MemcpyCopyKind, v[schema.MemcpyCopyKind].Int64)
		b.Int32(cK, int32(kind))
		t.nullEnum(b, cSK, v[schema.MemcpySrcKind], schema.MemcpySrcKind)
		t.nullEnum(b, cDK, v[schema.MemcpyDstKind], schema.MemcpyDstKind)
		um := kind >= 11 && kind <= 13 // the UM copy kinds
		if mc := v[schema.MemcpyMigrationCause]; um && mc.Valid {
			b.Int32(cMC, int32(t.enum(schema.MemcpyMigrationCause, mc.Int64)))
		} else {
			b.Null(cMC)
		}
		if va := v[schema.MemcpyVirtualAddress]; va.Valid && va.Int64 != 0 {
			b.Uint64(cVA, uint64(va.Int64))
		} else {
			b.Null(cVA)
		}
		cc := v[schema.MemcpyCopyCount]
		if !cc.Valid || cc.Int64 <= 0 {
			cc.Int64 = 1
		}
		b.Int64(cCC, cc.Int64)
		return true
	}
}

func fillMemset(t *tableRead) fillFunc {
	ix := t.ix
	act := newActivity(t)
	cB, cV, cMK := ix(ingest.ColBytes), ix(ingest.ColValue), ix(ingest.ColMemKind)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
		if !act.fill(b, v) {
			return false
		}
		b.Int64(cB, v[schema.MemsetBytes].Int64)
		b.Int64(cV, v[schema.MemsetValue].Int64)
		t.nullEnum(b, cMK, v[schema.MemsetMemKind], schema.MemsetMemKind)
		return true
	}
}

func fillSync(t *tableRead) fillFunc {
	ix := t.ix
	act := newActivity(t)
	cST, cEv := ix(ingest.ColSyncType), ix(ingest.ColEventID)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
		if !act.fill(b, v) {
			return false
		}
		st, stCol := v[schema.SyncSyncType].Int64, schema.SyncSyncType
		if old := v[schema.SyncDeprecatedSyncType]; old.Valid {
			st, stCol = old.Int64, schema.SyncDeprecatedSyncType
		}
		b.Int32(cST, int32(t.enum(stCol, st)))
		if ev := v[schema.SyncEventID]; !ev.Valid || ev.Int64 == 0xFFFFFFFF || ev.Int64 == -1 {
			b.Null(cEv)
		} else {
			b.Int64(cEv, ev.Int64)
		}
		return true
	}
}

func fillGPUFault(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cS, cE, cP, cD, cA, cN, cAT := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColAddress), ix(ingest.ColNumFaults), ix(ingest.ColAccessType)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
		if !ck.times(src, v[schema.GPUFaultStart], v[schema.GPUFaultEnd], true) {
			return false
		}
		b.Int64(cS, v[schema.GPUFaultStart].Int64)
		b.Int64(cE, v[schema.GPUFaultEnd].Int64)
		b.Int64(cP, pid(v[schema.GPUFaultGlobalPid].Int64))
		b.Int64(cD, t.id(schema.GPUFaultDeviceID, v[schema.GPUFaultDeviceID].Int64))
		b.Uint64(cA, uint64(v[schema.GPUFaultAddress].Int64))
		n := v[schema.GPUFaultNumFaults]
		if !n.Valid {
			n.Int64 = 1
		} else if n.Int64 < 0 {
			ck.bad(src, "numberOfPageFaults", n.Int64, "negative counts, read as 1")
			n.Int64 = 1
		}
		b.Int64(cN, n.Int64)
		b.Int32(cAT, int32(t.enum(schema.GPUFaultAccessType, v[schema.GPUFaultAccessType].Int64)))
		return true
	}
}

func fillCPUFault(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cS, cP, cA, cPC, cSL := ix(ingest.ColStart), ix(ingest.ColPid), ix(ingest.ColAddress), ix(ingest.ColPC), ix(ingest.ColSourceLine)
	strCols := []struct {
		col   int
		model int
	}{{schema.CPUFaultFunction, ix(ingest.ColFunction)}, {schema.CPUFaultModule, ix(ingest.ColModule)}, {schema.CPUFaultSourceFile, ix(ingest.ColSourceFile)}}
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
		if !ck.times(src, v[schema.CPUFaultStart], sql.NullInt64{}, false) {
			return false
		}
		b.Int64(cS, v[schema.CPUFaultStart].Int64)
		b.Int64(cP, pid(v[schema.CPUFaultGlobalPid].Int64))
		b.Uint64(cA, uint64(v[schema.CPUFaultAddress].Int64))
		if pc := v[schema.CPUFaultPC]; pc.Valid {
			b.Uint64(cPC, uint64(pc.Int64))
		} else {
			b.Null(cPC)
		}
		for _, c := range strCols {
			b.String(c.model, lookup(ck, s, src, t.decl.Cols[c.col].Name, v[c.col]))
		}
		b.Int32(cSL, int32(v[schema.CPUFaultSourceLine].Int64))
		return true
	}
}

func fillNVTX(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cS, cE, cP, cT, cET, cN, cD := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColEventType), ix(ingest.ColName), ix(ingest.ColDomainID)
	return func(b *ingest.Builder, v []sql.NullInt64, sv []sql.NullString, s *strs) bool {
		start, end := v[schema.NVTXStart], v[schema.NVTXEnd]
		if !ck.times(src, start, end, end.Valid) {
			return false
		}
		b.Int64(cS, start.Int64)
		if end.Valid {
			b.Int64(cE, end.Int64)
		} else {
			b.Null(cE)
		}
		gtid := v[schema.NVTXGlobalTid].Int64
		b.Int64(cP, pid(gtid))
		b.Int64(cT, tid(gtid))
		b.Int32(cET, int32(t.enum(schema.NVTXEventType, v[schema.NVTXEventType].Int64)))
		text, textID := sv[schema.NVTXText], v[schema.NVTXTextID]
		name := text.String
		if textID.Valid {
			if str, ok := s.m[textID.Int64]; ok {
				name = str
			} else if !text.Valid {
				ck.ref(s, src, "textId", textID.Int64)
				name = s.get(textID.Int64)
			}
		}
		b.String(cN, name)
		if d := v[schema.NVTXDomainID]; d.Valid {
			b.Int64(cD, d.Int64)
		} else {
			b.Null(cD)
		}
		return true
	}
}

func fillMemUsage(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cS, cP, cD, cA, cB, cMK, cO, cC := ix(ingest.ColStart), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColAddress), ix(ingest.ColBytes), ix(ingest.ColMemKind), ix(ingest.ColOperation), ix(ingest.ColCorrelationID)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
		if !ck.times(src, v[schema.MemUsageStart], sql.NullInt64{}, false) {
			return false
		}
		b.Int64(cS, v[schema.MemUsageStart].Int64)
		b.Int64(cP, pid(v[schema.MemUsageGlobalPid].Int64))
		b.Int64(cD, t.id(schema.MemUsageDeviceID, v[schema.MemUsageDeviceID].Int64))
		b.Uint64(cA, uint64(v[schema.MemUsageAddress].Int64))
		b.Int64(cB, v[schema.MemUsageBytes].Int64)
		b.Int32(cMK, int32(t.enum(schema.MemUsageMemKind, v[schema.MemUsageMemKind].Int64)))
		b.Int32(cO, int32(t.enum(schema.MemUsageOperation, v[schema.MemUsageOperation].Int64)))
		corr(b, cC, v[schema.MemUsageCorrelationID])
		return true
	}
}

func fillThread(t *tableRead) fillFunc {
	ix, ck, src := t.ix, t.ck, t.src
	cP, cT, cN := ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColName)
	return func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
		gtid := v[schema.ThreadGlobalTid].Int64
		b.Int64(cP, pid(gtid))
		b.Int64(cT, tid(gtid))
		b.String(cN, lookup(ck, s, src, "nameId", v[schema.ThreadNameID]))
		return true
	}
}

func fillGPU(t *tableRead) fillFunc {
	ix := t.ix
	cI, cN, cSM, cTM, cMa, cMi := ix(ingest.ColID), ix(ingest.ColName), ix(ingest.ColSMCount), ix(ingest.ColTotalMemory), ix(ingest.ColComputeMajor), ix(ingest.ColComputeMinor)
	return func(b *ingest.Builder, v []sql.NullInt64, sv []sql.NullString, _ *strs) bool {
		b.Int64(cI, t.id(schema.GPUID, v[schema.GPUID].Int64))
		b.String(cN, sv[schema.GPUName].String)
		b.Int64(cSM, v[schema.GPUSMCount].Int64)
		b.Int64(cTM, v[schema.GPUTotalMemory].Int64)
		b.Int32(cMa, int32(v[schema.GPUComputeMajor].Int64))
		b.Int32(cMi, int32(v[schema.GPUComputeMinor].Int64))
		return true
	}
}
