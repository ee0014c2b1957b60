package analyze

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// pidSource is a Source restricted to one process: tables with a pid column
// yield only that process's rows; the others (GPUs, the export's span) pass
// through. A job's per-process analyses are fed from the file's one pass
// (analyzeRanks); this is their Source for anything read later.
type pidSource struct {
	src  ingest.Source
	pid  int64
	info ingest.TraceInfo
}

// ProcessSource returns src restricted to process pid. The launch
// environment (rank variables) belongs to the process nsys started, not to
// each of its children, so it is dropped.
func ProcessSource(src ingest.Source, pid int64) ingest.Source {
	info := *src.Info()
	info.LaunchEnv = nil
	return &pidSource{src: src, pid: pid, info: info}
}

func (p *pidSource) Info() *ingest.TraceInfo { return &p.info }

func (p *pidSource) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	return p.ScanColumns(t, nil, fn)
}

// ScanColumns implements ingest.ColumnScanner (nil cols: every column).
func (p *pidSource) ScanColumns(t *ingest.Table, cols []string, fn func(arrow.RecordBatch) error) error {
	scan := func(f func(arrow.RecordBatch) error) error {
		if cs, ok := p.src.(ingest.ColumnScanner); ok && cols != nil {
			if t.Has(ingest.ColPid) {
				cols = withPid(t, cols)
			}
			return cs.ScanColumns(t, cols, f)
		}
		return p.src.Scan(t, f)
	}
	if !t.Has(ingest.ColPid) {
		return scan(fn)
	}
	return scan(func(r arrow.RecordBatch) error {
		out := filterPid(r, t, p.pid)
		if out == nil {
			return nil
		}
		defer out.Release()
		return fn(out)
	})
}

func withPid(t *ingest.Table, cols []string) []string {
	for _, c := range cols {
		if c == ingest.ColPid {
			return cols
		}
	}
	return append(append([]string{}, cols...), ingest.ColPid)
}

// filterPid returns the rows of r whose pid is pid as a new batch
// (ingest.Take; nil when there are none); r itself is returned, retained,
// when every row matches.
func filterPid(r arrow.RecordBatch, t *ingest.Table, pid int64) arrow.RecordBatch {
	pids := ingest.I64(r, t, ingest.ColPid)
	var rows []int32
	for i := 0; i < pids.Len(); i++ {
		if pids.Value(i) == pid {
			rows = append(rows, int32(i))
		}
	}
	switch len(rows) {
	case 0:
		return nil
	case pids.Len():
		r.Retain()
		return r
	}
	return ingest.Take(r, rows)
}

// NameIDs, Names and NameFlags pass the source's name table through
// (ingest.NameTable): a process's kernel names are the file's.
func (p *pidSource) NameIDs(t *ingest.Table) bool {
	nt, ok := p.src.(ingest.NameTable)
	return ok && nt.NameIDs(t)
}

func (p *pidSource) Names(ids []int64) ([]string, error) {
	return p.src.(ingest.NameTable).Names(ids)
}

func (p *pidSource) NameFlags(id int64) ingest.NameFlag {
	return p.src.(ingest.NameTable).NameFlags(id)
}
