// Package ingesttest builds traces in memory: an ingest.Source of literal
// rows, so that analysis can be tested as short readable scenarios without
// SQLite. The ingesters' accuracy and speed are tested on real and
// synthetic exports (ingest/nsys, synth); this is for behaviour.
//
//	tr := ingesttest.New("storm.sqlite").
//		Call(1, 1, "cudaDeviceSynchronize", 0, 2*ms).
//		GPUFault(1, 0, 0, 2*ms, 0x7f0000000000, 40)
//	res, err := analyze.Analyze(tr, analyze.DefaultOptions())
package ingesttest

import (
	"fmt"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
)

// Row is one row of a table: column name (ingest.Col*) to value. Values
// are int, int64, int32, uint64 or string, as the column's kind wants; a
// column left out is null when nullable, else zero.
type Row map[string]any

// With returns r with col set to v (r is changed too).
func (r Row) With(col string, v any) Row {
	r[col] = v
	return r
}

// Trace is an in-memory trace, an ingest.Source: each table yields its
// rows, in the order they were added, in one batch. It counts the scans of
// each table (Scans). Build it, then read it; it is not safe to add rows
// while it is read.
type Trace struct {
	info ingest.TraceInfo
	rows map[*ingest.Table][]Row

	mu    sync.Mutex
	scans map[string]int
}

// New returns an empty trace whose Info names path; Info's feature flags
// follow the rows added.
func New(path string) *Trace {
	return &Trace{
		info:  ingest.TraceInfo{Path: path, Producer: "ingesttest", Tables: map[string]bool{}, SpanStartNs: math.MaxInt64, SpanEndNs: math.MinInt64},
		rows:  map[*ingest.Table][]Row{},
		scans: map[string]int{},
	}
}

// Add appends rows to table t.
func (tr *Trace) Add(t *ingest.Table, rows ...Row) *Trace {
	for _, r := range rows {
		for col := range r {
			t.Index(col) // panics on a column t lacks: a mistake in the test
		}
		for _, col := range []string{ingest.ColStart, ingest.ColEnd} {
			if v, ok := r[col]; ok && v != nil {
				tr.info.SpanStartNs = min(tr.info.SpanStartNs, toInt64(v))
				tr.info.SpanEndNs = max(tr.info.SpanEndNs, toInt64(v))
			}
		}
	}
	tr.rows[t] = append(tr.rows[t], rows...)
	in := &tr.info
	in.Tables[t.Name] = true
	switch t {
	case ingest.API, ingest.Kernel, ingest.Memcpy, ingest.Memset, ingest.Sync:
		in.HasCUDA = true
	case ingest.GPUFault:
		in.HasGPUFaultTable = true
	case ingest.CPUFault:
		in.HasCPUFaultTable = true
	case ingest.NVTX:
		in.HasNVTX = true
	}
	if t == ingest.Memcpy {
		in.HasMigrationCause, in.HasVirtualAddress = true, true
	}
	return tr
}

// Info describes the trace; a test may change it (LaunchEnv,
// ProcessNames, SessionStartUTCNs) before reading.
func (tr *Trace) Info() *ingest.TraceInfo { return &tr.info }

// Scans returns how many times table t was scanned.
func (tr *Trace) Scans(t *ingest.Table) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.scans[t.Name]
}

// Scan implements ingest.Source: one batch of t's rows, if it has any.
func (tr *Trace) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	tr.mu.Lock()
	tr.scans[t.Name]++
	tr.mu.Unlock()
	rows := tr.rows[t]
	if len(rows) == 0 {
		return nil
	}
	rec, err := batch(t, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	return fn(rec)
}

// batch builds rows into one record batch of t.
func batch(t *ingest.Table, rows []Row) (arrow.RecordBatch, error) {
	b := ingest.NewBuilder(memory.DefaultAllocator, t)
	defer b.Release()
	b.Reserve(len(rows))
	for n, r := range rows {
		for i, c := range t.Columns {
			v, ok := r[c.Name]
			if !ok || v == nil {
				if c.Nullable {
					b.Null(i)
					continue
				}
				v = zero(c.Kind)
			}
			if err := put(b, i, c, v); err != nil {
				return nil, fmt.Errorf("ingesttest: %s row %d: %w", t.Name, n, err)
			}
		}
		b.EndRow()
	}
	return b.NewBatch(), nil
}

func zero(k ingest.Kind) any {
	if k == ingest.String {
		return ""
	}
	return 0
}

func put(b *ingest.Builder, i int, c ingest.Column, v any) error {
	switch c.Kind {
	case ingest.Int64:
		b.Int64(i, toInt64(v))
	case ingest.Int32:
		b.Int32(i, int32(toInt64(v)))
	case ingest.Uint64:
		if u, ok := v.(uint64); ok {
			b.Uint64(i, u)
		} else {
			b.Uint64(i, uint64(toInt64(v)))
		}
	case ingest.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("column %s: %T, want a string", c.Name, v)
		}
		b.String(i, s)
	}
	return nil
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case int32:
		return int64(x)
	case uint64:
		return int64(x)
	}
	panic(fmt.Sprintf("ingesttest: %T is not an integer", v))
}
