package synth

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"

	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// export is what the generator writes: the event tables, buffered
// (writer.go), and the strings their rows reference (StringIds).
type export struct {
	ctx  context.Context
	conn *sql.Conn

	strs                                                                      []string
	strID                                                                     map[string]int64 // lookup only; output order is by id
	runtime, kernel, memcpy, memset, sync, gpuFault, cpuFault, nvtx, memUsage *table
	tables                                                                    []*table

	lastCommitRows int64
}

func newExport(ctx context.Context, conn *sql.Conn) *export {
	x := &export{ctx: ctx, conn: conn, strID: map[string]int64{}}
	x.runtime = newTable(schema.Runtime.Name, 8, -1)
	x.kernel = newTable(schema.Kernel.Name, 28, -1)
	x.memcpy = newTable(schema.Memcpy.Name, 21, -1)
	x.memset = newTable(schema.Memset.Name, 12, -1)
	x.sync = newTable(schema.Sync.Name, 12, -1)
	x.gpuFault = newTable(schema.GPUFault.Name, 7, -1)
	x.cpuFault = newTable(schema.CPUFault.Name, 9, -1)
	x.nvtx = newTable(schema.NVTX.Name, 20, 6)
	x.memUsage = newTable(schema.MemUsage.Name, 18, -1)
	x.tables = []*table{x.runtime, x.kernel, x.memcpy, x.memset, x.sync, x.gpuFault, x.cpuFault, x.nvtx, x.memUsage}
	return x
}

// str interns s in StringIds.
func (x *export) str(s string) int64 {
	if id, ok := x.strID[s]; ok {
		return id
	}
	id := int64(len(x.strs))
	x.strs = append(x.strs, s)
	x.strID[s] = id
	return id
}

// flush writes buffered rows that start before watermark and commits
// every few million rows.
func (x *export) flush(watermark int64) error {
	var rows int64
	for _, tb := range x.tables {
		if err := tb.flush(x.ctx, x.conn, watermark); err != nil {
			return err
		}
		rows += tb.count
	}
	if rows-x.lastCommitRows > 4<<20 {
		for _, q := range []string{"COMMIT", "BEGIN"} {
			if _, err := x.conn.ExecContext(x.ctx, q); err != nil {
				return fmt.Errorf("committing: %w", err)
			}
		}
		x.lastCommitRows = rows
	}
	return nil
}

// finishTables writes StringIds and the export metadata, drops empty lazy
// tables and returns the row count of every table.
func (x *export) finishTables(exec func(q string, args ...any) error) (map[string]int64, error) {
	ctx, conn := x.ctx, x.conn
	st, err := conn.PrepareContext(ctx, "INSERT INTO "+schema.StringIds.Name+" VALUES (?,?)")
	if err != nil {
		return nil, fmt.Errorf("preparing StringIds insert: %w", err)
	}
	defer st.Close()
	for id, s := range x.strs {
		if _, err := st.ExecContext(ctx, id, s); err != nil {
			return nil, fmt.Errorf("writing StringIds: %w", err)
		}
	}
	// Mark the export as synthetic where a person would look.
	for _, kv := range [][2]string{
		{"EXPORT_PARAM_INPUT_FILE", "synth.nsys-rep"}, {"EXPORT_PARAM_OUTPUT_FILE", "synth.sqlite"},
		{"EXPORT_PARAM_INPUT_PATH", "/umtrace/synth.nsys-rep"}, {"EXPORT_PARAM_OUTPUT_PATH", "/umtrace/synth.sqlite"},
		{"EXPORT_PARAM_INPUT_PATH_ABS", "/umtrace/synth.nsys-rep"}, {"EXPORT_PARAM_OUTPUT_PATH_ABS", "/umtrace/synth.sqlite"},
		{"EXPORT_HOST", "umtrace-synth"},
	} {
		if err := exec("UPDATE "+schema.MetaDataExport+" SET value=? WHERE name=?", kv[1], kv[0]); err != nil {
			return nil, err
		}
	}
	if err := exec("UPDATE " + schema.MetaDataCapture + " SET value='umtrace synth' WHERE name='PROCESS_0:ARGUMENT_0'"); err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, tb := range x.tables {
		counts[tb.name] = tb.count
	}
	for _, name := range lazyTables {
		if counts[name] == 0 {
			if err := exec("DROP TABLE " + name); err != nil {
				return nil, err
			}
			delete(counts, name)
		}
	}
	rows, err := conn.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing tables: %w", err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	for _, n := range names {
		if _, ok := counts[n]; ok {
			continue
		}
		var c int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+n).Scan(&c); err != nil {
			return nil, fmt.Errorf("counting %s: %w", n, err)
		}
		counts[n] = c
	}
	return counts, nil
}

// rng is the generator's random stream.
type rng struct{ *rand.Rand }

// between returns a uniform int64 in [lo, hi].
func (r rng) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + r.Int64N(hi-lo+1)
}
