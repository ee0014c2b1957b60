package nsys

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// Scan streams table t as record batches (see ingest.Source). Rows come
// in the export's storage order, which nsys does not guarantee to be time
// order.
func (r *Reader) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	return r.ScanColumns(t, nil, fn)
}

// ScanColumns is Scan with only the named columns filled; the others are
// null (ingest.ColumnScanner). Empty cols means every column.
func (r *Reader) ScanColumns(t *ingest.Table, cols []string, fn func(arrow.RecordBatch) error) error {
	src := r.SourceTable(t)
	if src == "" {
		return nil
	}
	strs, err := r.stringIDs()
	if err == nil && t == ingest.Kernel && (len(cols) == 0 || slices.Contains(cols, ingest.ColName) || slices.Contains(cols, ingest.ColShortName)) {
		strs, err = r.stringDict() // every kernel name as a string
	}
	if err != nil {
		return err
	}
	// Each part checks its rows on its own; the parts' findings are added
	// up in part (storage) order, so the example a warning quotes is the
	// first bad row's, not whichever part got to one first.
	var mu sync.Mutex
	var cks []*checks
	err = r.scan(t, src, func() query {
		ck := &checks{win: r.window()}
		mu.Lock()
		cks = append(cks, ck)
		mu.Unlock()
		q := r.query(t, src, cols, ck)
		q.cols, q.ck, q.src = cols, ck, src
		return q
	}, strs, fn)
	all := &checks{}
	for _, ck := range cks {
		all.addPart(ck)
	}
	r.checks.merge(all)
	return err
}

// A query is the SELECT list for one table: integer expressions, then text
// expressions, and a row filler that maps them to Arrow columns.
type query struct {
	cols []string // projection (nil: all)
	ints []string
	strs []string
	fill func(b *ingest.Builder, iv []sql.NullInt64, sv []sql.NullString, s *strs) bool // false: row left out
	ck   *checks                                                                        // the scan's range checks
	src  string                                                                         // the source table
}

// notInt records a text or blob value in integer expression c, which
// every read path reads as NULL (sqlitefile.NotInt).
func (q *query) notInt(c int) {
	q.ck.badText(q.src, strings.Trim(q.ints[c], `"`), "text or blob values in an integer column, read as NULL")
}

// col returns the quoted column if the table has it, else NULL.
func (r *Reader) col(table, name string) string {
	if r.has(table, name) {
		return `"` + name + `"`
	}
	return "NULL"
}

// first returns the first of the named columns the table has, else NULL.
func (r *Reader) first(table string, names ...string) string {
	for _, n := range names {
		if r.has(table, n) {
			return `"` + n + `"`
		}
	}
	return "NULL"
}

var versionSuffix = regexp.MustCompile(`_v[0-9]+$`)

// StripVersion removes the trailing _vNNNN suffix nsys's own reports strip
// from CUDA API names (cudaMemcpy_v3020 → cudaMemcpy).
func StripVersion(name string) string { return versionSuffix.ReplaceAllString(name, "") }

func pid(g int64) int64 { return (g >> 24) & 0xFFFFFF }
func tid(g int64) int64 { return g & 0xFFFFFF }

func (r *Reader) query(t *ingest.Table, src string, cols []string, ck *checks) query {
	col := func(n string) string { return r.col(src, n) }
	// for selects expr only when one of the Arrow columns it feeds was
	// requested; otherwise SQLite need not decode it.
	for_ := func(expr string, feeds ...string) string {
		if len(cols) == 0 {
			return expr
		}
		for _, f := range feeds {
			for _, c := range cols {
				if f == c {
					return expr
				}
			}
		}
		return "NULL"
	}
	ix := t.Index
	corr := func(b *ingest.Builder, i int, v sql.NullInt64) {
		if !v.Valid || v.Int64 == 0 {
			b.Null(i)
		} else {
			b.Int64(i, v.Int64)
		}
	}
	// nullEnum appends a nullable enum column, range-checked.
	nullEnum := func(b *ingest.Builder, i int, v sql.NullInt64, name string, hi, unknown int64) {
		if v.Valid {
			b.Int32(i, int32(ck.enum(src, name, v.Int64, hi, unknown)))
		} else {
			b.Null(i)
		}
	}
	// gpuActivity fills the columns GPU activity tables share: start,
	// end, pid (from globalPid), device, context, stream; is holds their
	// indexes and v the first six selected values in the same order.
	gpuActivity := func(b *ingest.Builder, is []int, v []sql.NullInt64) {
		b.Int64(is[0], v[0].Int64)
		b.Int64(is[1], v[1].Int64)
		b.Int64(is[2], pid(v[2].Int64))
		b.Int64(is[3], ck.id(src, "deviceId", v[3].Int64, maxDeviceID))
		b.Int64(is[4], ck.id(src, "contextId", v[4].Int64, maxContextID))
		b.Int64(is[5], ck.id(src, "streamId", v[5].Int64, maxStreamID))
	}
	switch t {
	case ingest.API:
		cS, cE, cP, cT, cC, cEC, cN, cRN, cRV := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColCorrelationID), ix(ingest.ColEventClass), ix(ingest.ColName), ix(ingest.ColRawName), ix(ingest.ColReturnValue)
		hasClass := r.has(src, "eventClass")
		stripped := map[int64]string{}
		var tab *strs
		rawOf := func(id int64) string { return tab.get(id) }
		nameOf := func(id int64) string { return StripVersion(tab.get(id)) }
		return query{
			ints: []string{"start", `"end"`, col("globalTid"), for_(col("correlationId"), ingest.ColCorrelationID), for_(col("eventClass"), ingest.ColEventClass),
				col("nameId"), for_(col("returnValue"), ingest.ColReturnValue)},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				tab = s
				ck.ref(s, src, "nameId", v[5].Int64)
				b.Int64(cS, v[0].Int64)
				b.Int64(cE, v[1].Int64)
				b.Int64(cP, pid(v[2].Int64))
				b.Int64(cT, tid(v[2].Int64))
				corr(b, cC, v[3])
				ec := v[4].Int64
				known := hasClass && v[4].Valid
				if known && (ec < 0 || ec >= eventClassMax) {
					ck.bad(src, "eventClass", ec, fmt.Sprintf("values outside 0..%d, read from the API name", eventClassMax-1))
					known = false
				}
				if !known {
					name, ok := stripped[v[5].Int64]
					if !ok {
						name = nameOf(v[5].Int64)
						stripped[v[5].Int64] = name
					}
					ec = 0
					if strings.HasPrefix(name, "cu") && !strings.HasPrefix(name, "cuda") {
						ec = 1
					}
				}
				b.Int32(cEC, int32(ec))
				b.StringID(cN, v[5].Int64, nameOf)
				b.StringID(cRN, v[5].Int64, rawOf)
				b.Int32(cRV, int32(v[6].Int64))
				return true
			},
		}
	case ingest.Kernel:
		is := []int{ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColContextID), ix(ingest.ColStreamID)}
		cC, cN, cSN, cNID := ix(ingest.ColCorrelationID), ix(ingest.ColName), ix(ingest.ColShortName), ix(ingest.ColNameID)
		g := []int{ix(ingest.ColGridX), ix(ingest.ColGridY), ix(ingest.ColGridZ), ix(ingest.ColBlockX), ix(ingest.ColBlockY), ix(ingest.ColBlockZ)}
		nameCol := strings.Trim(r.first(src, "demangledName", "shortName"), `"`)
		var tab *strs
		strOf := func(id int64) string { return tab.get(id) }
		return query{
			ints: []string{"start", `"end"`, col("globalPid"), for_(col("deviceId"), ingest.ColDeviceID), for_(col("contextId"), ingest.ColContextID), col("streamId"),
				for_(col("correlationId"), ingest.ColCorrelationID), for_(r.first(src, "demangledName", "shortName"), ingest.ColName, ingest.ColNameID), for_(col("shortName"), ingest.ColShortName),
				for_(col("gridX"), ingest.ColGridX), for_(col("gridY"), ingest.ColGridY), for_(col("gridZ"), ingest.ColGridZ),
				for_(col("blockX"), ingest.ColBlockX), for_(col("blockY"), ingest.ColBlockY), for_(col("blockZ"), ingest.ColBlockZ)},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				gpuActivity(b, is, v)
				corr(b, cC, v[6])
				tab = s
				if v[7].Valid {
					ck.ref(s, src, nameCol, v[7].Int64)
				}
				if v[8].Valid {
					ck.ref(s, src, "shortName", v[8].Int64)
				}
				s.column(b, cN, v[7].Int64, strOf)
				s.column(b, cSN, v[8].Int64, strOf)
				if v[7].Valid && s.indexed {
					b.Int64(cNID, s.canonical(v[7].Int64))
				} else {
					b.Null(cNID)
				}
				for k, c := range g {
					b.Int32(c, int32(v[9+k].Int64))
				}
				return true
			},
		}
	case ingest.Memcpy:
		is := []int{ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColContextID), ix(ingest.ColStreamID)}
		cC, cB, cK, cSK, cDK, cMC, cVA, cCC := ix(ingest.ColCorrelationID), ix(ingest.ColBytes), ix(ingest.ColCopyKind), ix(ingest.ColSrcKind), ix(ingest.ColDstKind), ix(ingest.ColMigCause), ix(ingest.ColVirtAddr), ix(ingest.ColCopyCount)
		return query{
			ints: []string{"start", `"end"`, col("globalPid"), for_(col("deviceId"), ingest.ColDeviceID), for_(col("contextId"), ingest.ColContextID), col("streamId"),
				col("correlationId"), col("bytes"), col("copyKind"), for_(col("srcKind"), ingest.ColSrcKind), for_(col("dstKind"), ingest.ColDstKind),
				col("migrationCause"), col("virtualAddress"), for_(col("copyCount"), ingest.ColCopyCount)},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				gpuActivity(b, is, v)
				corr(b, cC, v[6])
				b.Int64(cB, v[7].Int64)
				kind := ck.enum(src, "copyKind", v[8].Int64, copyKindMax, 0)
				b.Int32(cK, int32(kind))
				nullEnum(b, cSK, v[9], "srcKind", memKindMax, memKindUnknown)
				nullEnum(b, cDK, v[10], "dstKind", memKindMax, memKindUnknown)
				um := kind >= 11 && kind <= 13
				if um && v[11].Valid {
					b.Int32(cMC, int32(ck.enum(src, "migrationCause", v[11].Int64, migCauseMax, 0)))
				} else {
					b.Null(cMC)
				}
				if v[12].Valid && v[12].Int64 != 0 {
					b.Uint64(cVA, uint64(v[12].Int64))
				} else {
					b.Null(cVA)
				}
				cc := v[13].Int64
				if !v[13].Valid || cc <= 0 {
					cc = 1
				}
				b.Int64(cCC, cc)
				return true
			},
		}
	case ingest.Memset:
		is := []int{ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColContextID), ix(ingest.ColStreamID)}
		cC, cB, cV, cMK := ix(ingest.ColCorrelationID), ix(ingest.ColBytes), ix(ingest.ColValue), ix(ingest.ColMemKind)
		return query{
			ints: []string{"start", `"end"`, col("globalPid"), col("deviceId"), col("contextId"), col("streamId"), col("correlationId"), col("bytes"), col("value"), col("memKind")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				gpuActivity(b, is, v)
				corr(b, cC, v[6])
				b.Int64(cB, v[7].Int64)
				b.Int64(cV, v[8].Int64)
				nullEnum(b, cMK, v[9], "memKind", memKindMax, memKindUnknown)
				return true
			},
		}
	case ingest.Sync:
		is := []int{ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColContextID), ix(ingest.ColStreamID)}
		cC, cST, cEv := ix(ingest.ColCorrelationID), ix(ingest.ColSyncType), ix(ingest.ColEventID)
		return query{
			ints: []string{"start", `"end"`, col("globalPid"), col("deviceId"), col("contextId"), col("streamId"), col("correlationId"), col("deprecatedSyncType"), col("syncType"), col("eventId")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				gpuActivity(b, is, v)
				corr(b, cC, v[6])
				st, stCol := v[8].Int64, "syncType"
				if v[7].Valid {
					st, stCol = v[7].Int64, "deprecatedSyncType"
				}
				b.Int32(cST, int32(ck.enum(src, stCol, st, syncTypeMax, 0)))
				if !v[9].Valid || v[9].Int64 == 0xFFFFFFFF || v[9].Int64 == -1 {
					b.Null(cEv)
				} else {
					b.Int64(cEv, v[9].Int64)
				}
				return true
			},
		}
	case ingest.GPUFault:
		cS, cE, cP, cD, cA, cN, cAT := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColAddress), ix(ingest.ColNumFaults), ix(ingest.ColAccessType)
		return query{
			ints: []string{"start", r.first(src, "end", "start"), col("globalPid"), col("deviceId"), col("address"), col("numberOfPageFaults"), col("faultAccessType")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
				if !ck.times(src, v[0], v[1], true) {
					return false
				}
				b.Int64(cS, v[0].Int64)
				b.Int64(cE, v[1].Int64)
				b.Int64(cP, pid(v[2].Int64))
				b.Int64(cD, ck.id(src, "deviceId", v[3].Int64, maxDeviceID))
				b.Uint64(cA, uint64(v[4].Int64))
				n := v[5].Int64
				if !v[5].Valid {
					n = 1
				} else if n < 0 {
					ck.bad(src, "numberOfPageFaults", n, "negative counts, read as 1")
					n = 1
				}
				b.Int64(cN, n)
				b.Int32(cAT, int32(ck.enum(src, "faultAccessType", v[6].Int64, accessTypeMax, 0)))
				return true
			},
		}
	case ingest.CPUFault:
		cS, cP, cA, cPC, cF, cM, cSF, cSL := ix(ingest.ColStart), ix(ingest.ColPid), ix(ingest.ColAddress), ix(ingest.ColPC), ix(ingest.ColFunction), ix(ingest.ColModule), ix(ingest.ColSourceFile), ix(ingest.ColSourceLine)
		strCols := []string{"CpuInstruction", "module", "sourceFile"}
		return query{
			ints: []string{"start", col("globalPid"), col("address"), col("originalFaultPc"), col("CpuInstruction"), col("module"), col("sourceFile"), col("sourceLine")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
				if !ck.times(src, v[0], sql.NullInt64{}, false) {
					return false
				}
				b.Int64(cS, v[0].Int64)
				b.Int64(cP, pid(v[1].Int64))
				b.Uint64(cA, uint64(v[2].Int64))
				if v[3].Valid {
					b.Uint64(cPC, uint64(v[3].Int64))
				} else {
					b.Null(cPC)
				}
				for k, c := range []int{cF, cM, cSF} {
					b.String(c, lookup(ck, s, src, strCols[k], v[4+k]))
				}
				b.Int32(cSL, int32(v[7].Int64))
				return true
			},
		}
	case ingest.NVTX:
		cS, cE, cP, cT, cET, cN, cD := ix(ingest.ColStart), ix(ingest.ColEnd), ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColEventType), ix(ingest.ColName), ix(ingest.ColDomainID)
		return query{
			ints: []string{"start", col("end"), col("globalTid"), col("eventType"), col("textId"), col("domainId")},
			strs: []string{col("text")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, sv []sql.NullString, s *strs) bool {
				if !ck.times(src, v[0], v[1], v[1].Valid) {
					return false
				}
				b.Int64(cS, v[0].Int64)
				if v[1].Valid {
					b.Int64(cE, v[1].Int64)
				} else {
					b.Null(cE)
				}
				b.Int64(cP, pid(v[2].Int64))
				b.Int64(cT, tid(v[2].Int64))
				et := v[3].Int64
				if et < 0 || et >= eventTypeMax {
					ck.bad(src, "eventType", et, fmt.Sprintf("values outside 0..%d, read as -1 (unknown)", eventTypeMax-1))
					et = -1
				}
				b.Int32(cET, int32(et))
				name := sv[0].String
				if v[4].Valid {
					if t, ok := s.m[v[4].Int64]; ok {
						name = t
					} else if !sv[0].Valid {
						ck.ref(s, src, "textId", v[4].Int64)
						name = s.get(v[4].Int64)
					}
				}
				b.String(cN, name)
				if v[5].Valid {
					b.Int64(cD, v[5].Int64)
				} else {
					b.Null(cD)
				}
				return true
			},
		}
	case ingest.MemUsage:
		cS, cP, cD, cA, cB, cMK, cO, cC := ix(ingest.ColStart), ix(ingest.ColPid), ix(ingest.ColDeviceID), ix(ingest.ColAddress), ix(ingest.ColBytes), ix(ingest.ColMemKind), ix(ingest.ColOperation), ix(ingest.ColCorrelationID)
		return query{
			ints: []string{"start", col("globalPid"), col("deviceId"), col("address"), col("bytes"), col("memKind"), col("memoryOperationType"), col("correlationId")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, _ *strs) bool {
				if !ck.times(src, v[0], sql.NullInt64{}, false) {
					return false
				}
				b.Int64(cS, v[0].Int64)
				b.Int64(cP, pid(v[1].Int64))
				b.Int64(cD, ck.id(src, "deviceId", v[2].Int64, maxDeviceID))
				b.Uint64(cA, uint64(v[3].Int64))
				b.Int64(cB, v[4].Int64)
				b.Int32(cMK, int32(ck.enum(src, "memKind", v[5].Int64, memKindMax, memKindUnknown)))
				op := v[6].Int64
				if op < 0 || op > memOpMax {
					ck.bad(src, "memoryOperationType", op, fmt.Sprintf("values outside 0..%d, read as -1 (unknown)", memOpMax))
					op = -1
				}
				b.Int32(cO, int32(op))
				corr(b, cC, v[7])
				return true
			},
		}
	case ingest.Thread:
		cP, cT, cN := ix(ingest.ColPid), ix(ingest.ColTid), ix(ingest.ColName)
		return query{
			ints: []string{col("globalTid"), col("nameId")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, _ []sql.NullString, s *strs) bool {
				b.Int64(cP, pid(v[0].Int64))
				b.Int64(cT, tid(v[0].Int64))
				b.String(cN, lookup(ck, s, src, "nameId", v[1]))
				return true
			},
		}
	case ingest.GPU:
		cI, cN, cSM, cTM, cMa, cMi := ix(ingest.ColID), ix(ingest.ColName), ix(ingest.ColSMCount), ix(ingest.ColTotalMemory), ix(ingest.ColComputeMajor), ix(ingest.ColComputeMinor)
		idCol := strings.Trim(r.first(src, "id", "deviceId"), `"`)
		return query{
			ints: []string{r.first(src, "id", "deviceId"), r.first(src, "smCount", "numMultiprocessors"), r.first(src, "totalMemory", "globalMemorySize"), r.first(src, "computeMajor", "computeCapabilityMajor"), r.first(src, "computeMinor", "computeCapabilityMinor")},
			strs: []string{col("name")},
			fill: func(b *ingest.Builder, v []sql.NullInt64, sv []sql.NullString, _ *strs) bool {
				b.Int64(cI, ck.id(src, idCol, v[0].Int64, maxDeviceID))
				b.String(cN, sv[0].String)
				b.Int64(cSM, v[1].Int64)
				b.Int64(cTM, v[2].Int64)
				b.Int32(cMa, int32(v[3].Int64))
				b.Int32(cMi, int32(v[4].Int64))
				return true
			},
		}
	}
	panic("nsys: no query for table " + t.Name)
}

// column appends the string with id to column i: an index into StringIds
// itself where it was read by the page reader (no copy), else a value of
// the batch's own dictionary (name resolves id).
func (s *strs) column(b *ingest.Builder, i int, id int64, name func(int64) string) {
	if s.dict != nil && s.has(id) {
		b.DictIndex(i, s.dict, int32(id))
		return
	}
	b.StringID(i, id, name)
}

// lookup resolves a nullable StringIds reference ("" for NULL).
func lookup(ck *checks, s *strs, table, col string, v sql.NullInt64) string {
	if !v.Valid {
		return ""
	}
	ck.ref(s, table, col, v.Int64)
	return s.get(v.Int64)
}

// maxParts bounds the parts of one table.
const maxParts = 4096

// readers bounds concurrent SQLite readers across all scans of a Reader's
// process: each is CPU-bound, so more than the cores only adds memory.
var readers = make(chan struct{}, runtime.GOMAXPROCS(0))

// scan runs q over src and emits batches of t in storage (rowid) order.
// Large tables are split into parts of about Options.ParallelRows/2 rows:
// leaf-page ranges for the page reader, rowid ranges for SQLite (which
// seeks a rowid range without a full scan). A few parts are read ahead
// concurrently and their batches handed to fn in part order, from one
// goroutine at a time.
func (r *Reader) scan(t *ingest.Table, src string, newQuery func() query, s *strs, fn func(arrow.RecordBatch) error) error {
	q := newQuery()
	sel := append(append([]string{}, q.ints...), q.strs...)
	base := fmt.Sprintf(`SELECT %s FROM "%s"`, strings.Join(sel, ", "), src)
	var lo, hi sql.NullInt64
	if err := r.db.QueryRow(rowidSpanSQL(src)).Scan(&lo, &hi); err != nil {
		return r.wrapDBErr("reading "+src, err)
	}
	if !lo.Valid {
		return nil // empty table
	}
	span := struct{ lo, hi int64 }{lo.Int64, hi.Int64}
	parts := 1
	if n, par := hi.Int64-lo.Int64+1, r.opts.ParallelRows; n >= par {
		parts = int(min(n/max(par/2, 1), maxParts))
	}
	// A part reads rows into a builder; what names it in errors; batches
	// bounds how many batches it can emit.
	type part struct {
		what    string
		batch   int
		batches int
		read    func(b *ingest.Builder, q query, emit func() error) (int, error)
		hold    bool  // hold the batches until the part is read (page parts)
		bytes   int64 // about what its batches hold (read-ahead is bounded in bytes)
	}
	var ps []part
	pt, err := r.pageLayout(src)
	if err != nil {
		return err
	}
	var cols []sqlitefile.Column
	if pt != nil {
		ic, ok1 := pt.columns(q.ints)
		sc, ok2 := pt.columns(q.strs)
		if ok1 && ok2 {
			for i := range ic {
				ic[i].IntOnly = true
			}
			for i := range sc {
				sc[i].Text = true
			}
			cols = append(ic, sc...)
		}
	}
	if cols != nil {
		leaves := pt.leaves
		parts = min(parts, len(leaves))
		per := len(leaves) / max(parts, 1)
		rowsPer := int(min((hi.Int64-lo.Int64+1)/int64(max(parts, 1))+1, int64(r.opts.BatchRows)))
		for i := 0; i < parts; i++ {
			l := leaves[i*per:]
			if i < parts-1 {
				l = l[:per]
			}
			// A leaf holds at most a cell per 4 bytes of its page.
			maxRows := len(l) * r.pages.PageSize() / 4
			ps = append(ps, part{
				what:    fmt.Sprintf("pages %d..%d", l[0], l[len(l)-1]),
				batch:   rowsPer,
				batches: maxRows/r.opts.BatchRows + 2,
				read: func(b *ingest.Builder, q query, emit func() error) (int, error) {
					return r.scanPages(b, q, s, cols, pt.ncols, l, emit)
				},
				hold:  true,
				bytes: int64(len(l)) * int64(r.pages.PageSize()),
			})
		}
	} else {
		if err := r.checkDriverTable(src); err != nil {
			return err
		}
		stmt := base + ` WHERE rowid >= ? AND rowid < ?`
		step := (hi.Int64 - lo.Int64 + 1 + int64(parts) - 1) / int64(parts)
		for i := 0; i < parts; i++ {
			a := lo.Int64 + int64(i)*step
			b := min(a+step, hi.Int64+1)
			ps = append(ps, part{
				what:    fmt.Sprintf("rowid %d..%d", a, b-1),
				batch:   int(min(b-a, int64(r.opts.BatchRows))),
				batches: int((b-a)/int64(r.opts.BatchRows)) + 2,
				bytes:   (b - a) * 8 * int64(len(sel)),
				read: func(bd *ingest.Builder, q query, emit func() error) (int, error) {
					if r.opts.Read != ReadDriverRows && fastAvailable && len(q.strs) == 0 {
						return r.scanRangeFast(bd, q, s, stmt, a, b, emit)
					}
					return r.scanRangeDriver(bd, q, s, stmt, a, b, emit)
				},
			})
		}
	}
	// readPart runs one part with its own builder.
	readPart := func(p part, q query, fn func(arrow.RecordBatch) error) error {
		readers <- struct{}{}
		defer func() { <-readers }()
		b := ingest.NewBuilder(r.opts.Mem, t)
		b.Project(q.cols)
		defer b.Release()
		// Size each batch's buffers once (the part's rows, at most a
		// batch) instead of letting every column double its way up.
		b.Reserve(p.batch)
		// A page part holds its batches until it has read every page:
		// if it doubts one, SQLite reads the part again from its start.
		var held []arrow.RecordBatch
		defer func() {
			for _, rec := range held {
				rec.Release()
			}
		}()
		emit := func() error {
			rec := b.NewBatch()
			b.Reserve(p.batch)
			if p.hold {
				held = append(held, rec)
				return nil
			}
			defer rec.Release()
			return fn(rec)
		}
		rows, err := p.read(b, q, emit)
		if err == nil && p.hold {
			if b.Rows() > 0 {
				emit()
			}
			for i, rec := range held {
				if err = fn(rec); err != nil {
					break
				}
				rec.Release()
				held[i] = nil
			}
			held = slices.DeleteFunc(held, func(r arrow.RecordBatch) bool { return r == nil })
			return err
		}
		var pc *pageCorrupt
		if errors.As(err, &pc) {
			return pc
		}
		if err != nil {
			if err == errStopped {
				return err
			}
			return r.wrapDBErr(fmt.Sprintf("reading %s (%s, row %d)", src, p.what, rows), err)
		}
		if b.Rows() > 0 {
			return emit()
		}
		return nil
	}
	// rest reads, through SQLite, the rows after the page reader's last
	// good one when it doubted a page.
	rest := func(pc *pageCorrupt) error {
		if err := r.doubted(src, pc.err, fmt.Sprintf("%s: the page reader doubted a page (%v); rows after rowid %d read through SQLite", src, pc.err, pc.last)); err != nil {
			return err
		}
		lo := pc.last
		if lo != math.MinInt64 && lo != math.MaxInt64 {
			lo++
		}
		// The same rowid span as the SQLite path reads (a damaged tree
		// can hold keys past it that SQLite's range walk never sees).
		lo = max(lo, span.lo)
		end := span.hi
		if end < math.MaxInt64 {
			end++
		}
		stmt := base + ` WHERE rowid >= ? AND rowid < ?`
		return readPart(part{
			what:  fmt.Sprintf("rowid %d..%d after a doubtful page", lo, end-1),
			batch: r.opts.BatchRows,
			read: func(bd *ingest.Builder, q query, emit func() error) (int, error) {
				return r.scanRangeDriver(bd, q, s, stmt, lo, end, emit)
			},
		}, newQuery(), fn)
	}
	if len(ps) == 1 {
		err := readPart(ps[0], q, fn)
		if pc := (*pageCorrupt)(nil); errors.As(err, &pc) {
			return rest(pc)
		}
		return err
	}
	// Part i sends its batches on chs[i], which holds all of them, so a
	// part never waits for the consumer (a waiting part would hold a
	// reader that an earlier part needs). Parts are read ahead of the
	// consumer while the unconsumed ones hold at most readAheadBytes (and
	// at least the one it waits for), which bounds the batches held
	// whatever the rows' width; maxAhead bounds the goroutines.
	maxAhead := 4 * cap(readers)
	var unconsumed int64 // bytes of parts launched and not yet consumed
	chs := make([]chan arrow.RecordBatch, len(ps))
	errs := make([]error, len(ps))
	done := make(chan struct{})
	launched := 0
	launch := func(i int) {
		chs[i] = make(chan arrow.RecordBatch, ps[i].batches)
		q := newQuery() // each part gets its own: row fillers keep per-scan caches
		go func() {
			defer close(chs[i])
			err := readPart(ps[i], q, func(rec arrow.RecordBatch) error {
				select {
				case <-done:
					return errStopped
				default:
				}
				rec.Retain()
				select {
				case chs[i] <- rec:
					return nil
				default:
					rec.Release()
					return fmt.Errorf("reading %s (%s): more batches than its %d rows allow", src, ps[i].what, ps[i].batches)
				}
			})
			if err != errStopped {
				errs[i] = err
			}
		}()
	}
	var ferr error
	for i := range ps {
		for ; launched < len(ps) && ferr == nil; launched++ {
			if launched > i && (launched >= i+maxAhead || unconsumed+ps[launched].bytes > readAheadBytes) {
				break
			}
			unconsumed += ps[launched].bytes
			launch(launched)
		}
		unconsumed -= ps[i].bytes
		for rec := range chs[i] {
			if ferr == nil {
				if ferr = fn(rec); ferr != nil {
					close(done)
				}
			}
			rec.Release()
		}
		if pc := (*pageCorrupt)(nil); ferr == nil && errors.As(errs[i], &pc) {
			// Parts after this one are SQLite's now: stop and drop them.
			close(done)
			for j := i + 1; j < launched; j++ {
				for rec := range chs[j] {
					rec.Release()
				}
			}
			return rest(pc)
		}
		if ferr == nil && errs[i] != nil {
			ferr = errs[i]
			close(done)
		}
		if ferr != nil {
			// Drain the parts still running; they stop at their next batch.
			for j := i + 1; j < launched; j++ {
				for rec := range chs[j] {
					rec.Release()
				}
			}
			return ferr
		}
	}
	return nil
}

var errStopped = errors.New("scan stopped")

// readAheadBytes bounds what the parts read ahead of a scan's consumer
// hold (estimated from their pages, or rows times columns): 16 MiB is four
// parts of a wide table, enough to keep every reader busy.
const readAheadBytes = 16 << 20

// addRow fills one row from its values (every read path ends here) and
// emits the batch when it is full.
func (r *Reader) addRow(b *ingest.Builder, q query, iv []sql.NullInt64, sv []sql.NullString, s *strs, emit func() error) error {
	if !q.fill(b, iv, sv, s) {
		return nil
	}
	b.EndRow()
	if b.Rows() >= r.opts.BatchRows {
		return emit()
	}
	return nil
}

// rowidSpanSQL selects the smallest and largest rowid of table. Each is its
// own subquery: SQLite answers a lone min() or max() of the rowid with one
// b-tree seek, but both in one SELECT with a full scan.
func rowidSpanSQL(table string) string {
	return `SELECT (SELECT min(rowid) FROM "` + table + `"), (SELECT max(rowid) FROM "` + table + `")`
}

// scanRangeDriver reads stmt's rows through the go-sqlite3 driver directly
// (no database/sql conversion); it handles text columns, which the bulk
// reader does not.
func (r *Reader) scanRangeDriver(b *ingest.Builder, q query, s *strs, stmt string, lo, hi int64, emit func() error) (rows int, err error) {
	conn, err := r.db.Conn(context.Background())
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	iv := make([]sql.NullInt64, len(q.ints))
	sv := make([]sql.NullString, len(q.strs))
	dest := make([]driver.Value, len(q.ints)+len(q.strs))
	err = conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("sqlite driver does not support direct queries")
		}
		rs, err := qc.QueryContext(context.Background(), stmt, []driver.NamedValue{{Ordinal: 1, Value: lo}, {Ordinal: 2, Value: hi}})
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			if err := rs.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			rows++
			for i := range iv {
				v, null := sqlitefile.DriverInt(dest[i])
				iv[i] = sql.NullInt64{Int64: v, Valid: null == sqlitefile.IsValue}
				if null == sqlitefile.NotInt {
					q.notInt(i)
				}
			}
			for i := range sv {
				sv[i] = toStr(dest[len(iv)+i])
			}
			if err := r.addRow(b, q, iv, sv, s, emit); err != nil {
				return err
			}
		}
	})
	return rows, err
}

func toStr(v driver.Value) sql.NullString {
	s, ok := sqlitefile.DriverText(v)
	return sql.NullString{String: s, Valid: ok}
}
