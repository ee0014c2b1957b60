package nsys

import (
	"database/sql"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// SourceTable returns the export table an Arrow table is read from in this
// export ("" when the export has none).
func (r *Reader) SourceTable(t *ingest.Table) string {
	switch t {
	case ingest.GPU:
		return r.gpuTable()
	}
	if d := schema.ForModel(t); d != nil {
		return r.cols.present(d.Name)
	}
	return ""
}

// tableSet is the tables of the export that the reader knows, each with
// its column set.
type tableSet map[string]map[string]bool

// present returns t if the export has it, else "".
func (ts tableSet) present(t string) string {
	if _, ok := ts[t]; ok {
		return t
	}
	return ""
}

// has reports whether table has col.
func (ts tableSet) has(table, col string) bool { return ts[table][col] }

// gpuTable picks the GPU description table: TARGET_INFO_GPU with an id
// column (2021.3+), else the older TARGET_INFO_CUDA_GPU, else the early
// TARGET_INFO_GPU (deviceId, name only).
func (r *Reader) gpuTable() string {
	if r.cols.has(schema.GPU.Name, "id") {
		return schema.GPU.Name
	}
	if r.cols.has(schema.GPU.Alt[0], "deviceId") && r.nonEmpty(schema.GPU.Alt[0]) {
		return schema.GPU.Alt[0]
	}
	if r.cols.has(schema.GPU.Name, "deviceId") {
		return schema.GPU.Name
	}
	return ""
}

func (r *store) nonEmpty(table string) bool {
	var one int
	err := r.db.QueryRow(`SELECT 1 FROM "` + table + `" LIMIT 1`).Scan(&one)
	return err == nil
}

func (r *Reader) detect() error {
	rows, err := r.db.Query(`SELECT name FROM sqlite_master WHERE type='table'`)
	if err != nil {
		return r.wrapDBErr("reading schema", err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return r.wrapDBErr("reading schema", err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return r.wrapDBErr("reading schema", err)
	}
	rows.Close()
	set := map[string]bool{}
	for _, t := range tables {
		set[t] = true
	}
	if !set[schema.StringIds.Name] {
		switch {
		case set[schema.NvprofTables[0]] || set[schema.NvprofTables[1]]:
			return fmt.Errorf("%s: %w: this is an nvprof export (StringTable); profile with nsys instead", r.path, ErrNotNsysExport)
		case len(tables) == 0:
			return fmt.Errorf("%s: %w: the database has no tables", r.path, ErrNotNsysExport)
		default:
			sort.Strings(tables)
			if len(tables) > 5 {
				tables = append(tables[:5], "...")
			}
			return fmt.Errorf("%s: %w: no StringIds table (tables: %s)", r.path, ErrNotNsysExport, strings.Join(tables, ", "))
		}
	}
	r.cols = tableSet{}
	for _, t := range append(schema.Names(schema.Tables...), schema.ThreadNames.Name, schema.GPU.Name, schema.GPU.Alt[0], schema.StringIds.Name) {
		if !set[t] {
			continue
		}
		cs, err := r.columns(t)
		if err != nil {
			return err
		}
		r.cols[t] = cs
	}
	in := &r.info
	in.Path = r.path
	in.Producer = "nsys"
	in.Tables = map[string]bool{}
	for _, t := range schema.Names(schema.Tables...) {
		in.Tables[t] = set[t]
	}
	for _, t := range schema.Names(schema.CUDATables...) {
		if set[t] && r.nonEmpty(t) {
			in.HasCUDA = true
			break
		}
	}
	in.HasGPUFaultTable = set[schema.GPUFault.Name]
	in.HasCPUFaultTable = set[schema.CPUFault.Name]
	in.HasMigrationCause = r.cols.has(schema.Memcpy.Name, "migrationCause")
	in.HasVirtualAddress = r.cols.has(schema.Memcpy.Name, "virtualAddress")
	in.HasNVTX = set[schema.NVTX.Name]
	for _, mt := range []string{schema.MetaDataExport, schema.ExportMetaData} {
		if !set[mt] {
			continue
		}
		in.MetaTable = mt
		kv, err := r.keyValues(mt)
		if err != nil {
			return err
		}
		in.ProductVersion = kv["EXPORT_PRODUCT_VERSION"]
		in.SchemaVersion = kv["EXPORT_SCHEMA_VERSION"]
		in.Lazy = kv["EXPORT_PARAM_LAZY"]
		break
	}
	if set[schema.MetaDataCapture] {
		kv, err := r.keyValues(schema.MetaDataCapture)
		if err != nil {
			return err
		}
		in.CollectCPUFaults = anyTrue(kv, ":COLLECT_UVM_CPU_PAGE_FAULTS")
		in.CollectGPUFaults = anyTrue(kv, ":COLLECT_UVM_GPU_PAGE_FAULTS")
	}
	if set[schema.AnalysisDetails] {
		var s, e sql.NullInt64
		if err := r.db.QueryRow(`SELECT startTime, stopTime FROM ANALYSIS_DETAILS LIMIT 1`).Scan(&s, &e); err == nil {
			in.SpanStartNs, in.SpanEndNs = s.Int64, e.Int64
		}
	}
	if set[schema.SessionStartTime] {
		var u sql.NullInt64
		if err := r.db.QueryRow(`SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1`).Scan(&u); err == nil {
			in.SessionStartUTCNs = u.Int64
		}
	}
	r.readProcInfo(set)
	if set[schema.DiagnosticEvent] {
		rows, err := r.db.Query(`SELECT text FROM DIAGNOSTIC_EVENT WHERE severity IN (2,3) ORDER BY timestamp, text LIMIT 50`)
		if err == nil {
			for rows.Next() {
				var t sql.NullString
				if rows.Scan(&t) == nil && t.Valid {
					in.Diagnostics = append(in.Diagnostics, strings.TrimSpace(t.String))
				}
			}
			rows.Close()
		}
	}
	return nil
}

func anyTrue(kv map[string]string, suffix string) *bool {
	var found, val bool
	for k, v := range kv {
		if strings.HasSuffix(k, suffix) {
			found = true
			if v == "true" {
				val = true
			}
		}
	}
	if !found {
		return nil
	}
	return &val
}

func (r *store) columns(table string) (map[string]bool, error) {
	rows, err := r.db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, r.wrapDBErr("reading columns of "+table, err)
	}
	defer rows.Close()
	cs := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, r.wrapDBErr("reading columns of "+table, err)
		}
		cs[n] = true
	}
	return cs, r.rowsErr("reading columns of "+table, rows.Err())
}

func (r *store) rowsErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return r.wrapDBErr(what, err)
}

// keyValues reads a (name, value) metadata table. Repeated names keep the
// last value.
func (r *store) keyValues(table string) (map[string]string, error) {
	rows, err := r.db.Query(`SELECT name, value FROM "` + table + `"`)
	if err != nil {
		return nil, r.wrapDBErr("reading "+table, err)
	}
	defer rows.Close()
	kv := map[string]string{}
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return nil, r.wrapDBErr("reading "+table, err)
		}
		kv[k.String] = v.String
	}
	return kv, r.rowsErr("reading "+table, rows.Err())
}

// stringTable is the export's StringIds: read once, as an index where the
// page reader can (values read when asked for), and whole when a scan
// gives kernel names as strings.
type stringTable struct {
	r    *Reader
	once sync.Once
	err  error
	s    *strs
	// StringIds whole (stringDict), when s is an index.
	dictOnce sync.Once
	dictErr  error
	dict     *strs
}

// stringIDs loads StringIds once: as an index where the page reader can
// read it (values read when asked for), else whole through SQLite.
func (st *stringTable) stringIDs() (*strs, error) {
	st.once.Do(func() {
		if st.s, st.err = st.stringIDsIndex(); st.s != nil || st.err != nil {
			return
		}
		if st.s, st.err = st.stringIDsWhole(); st.s != nil {
			st.s.index()
		}
	})
	return st.s, st.err
}

// stringDict is StringIds with every value held (one buffer and a shared
// dictionary on the page path), for scans that give kernel names as
// strings; read once, the first time one asks.
func (st *stringTable) stringDict() (*strs, error) {
	s, err := st.stringIDs()
	if err != nil || !s.lazy {
		return s, err
	}
	st.dictOnce.Do(func() {
		st.dict, st.dictErr = st.stringIDsWhole()
		if st.dict != nil {
			st.dict.canon, st.dict.indexed = s.canon, true
		}
	})
	return st.dict, st.dictErr
}

// stringIDsWhole reads every value of StringIds: through the page reader
// where it can, else through SQLite.
func (st *stringTable) stringIDsWhole() (*strs, error) {
	r := st.r
	if s, err := r.strtab.stringIDsPages(); s != nil || err != nil {
		return s, err
	}
	if err := r.checkDriverTable(schema.StringIds.Name); err != nil {
		return nil, err
	}
	rows, err := r.db.Query(`SELECT id, value FROM StringIds`)
	if err != nil {
		return nil, r.wrapDBErr("reading StringIds", err)
	}
	defer rows.Close()
	var b strsBuilder
	for rows.Next() {
		var id int64
		var v sql.NullString
		if err := rows.Scan(&id, &v); err != nil {
			return nil, r.wrapDBErr("reading StringIds", err)
		}
		b.add(id, v.String)
	}
	if err := rows.Err(); err != nil {
		return nil, r.wrapDBErr("reading StringIds", err)
	}
	return b.done(), nil
}

// EstimateRows returns an upper bound on t's rows: the rowid span of its
// source table (two b-tree seeks, no scan), at most what its pages can
// hold. Rowids need not be dense: a table of two rows at rowids 1 and
// 2^62 had consumers size a slice of 2^62 records. It implements
// ingest.RowEstimator.
func (r *Reader) EstimateRows(t *ingest.Table) int64 {
	src := r.SourceTable(t)
	if src == "" {
		return 0
	}
	var lo, hi sql.NullInt64
	if err := r.db.QueryRow(rowidSpanSQL(src)).Scan(&lo, &hi); err != nil || !lo.Valid {
		return 0
	}
	return spanRows(lo.Int64, hi.Int64, r.maxRows(src))
}

// spanRows bounds the rows of a table whose rowids run from lo to hi and
// whose pages hold at most maxRows: the span's length, counted in uint64
// (-2^63..2^63-1 overflows an int64), at most maxRows.
func spanRows(lo, hi, maxRows int64) int64 {
	return int64(min(uint64(hi)-uint64(lo), uint64(maxRows)-1) + 1)
}

// maxRows bounds the rows table src can hold: a leaf page holds at most a
// cell per 4 bytes (a cell pointer and three one-byte fields), counted on
// the table's leaves where the page reader has its plan, else on every
// page of the file.
func (r *Reader) maxRows(src string) int64 {
	if pt, err := r.layouts.peekLayout(src); err == nil && pt != nil {
		return int64(len(pt.leaves)) * int64(r.pages.PageSize()/4)
	}
	var pages, size int64
	if err := r.db.QueryRow(`SELECT * FROM pragma_page_count(), pragma_page_size()`).Scan(&pages, &size); err != nil || pages <= 0 || size <= 0 {
		return math.MaxInt64
	}
	return pages * (size / 4)
}
