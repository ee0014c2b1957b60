package synth

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// A multi-rank job in one file: what nsys writes when it profiles the
// launcher of a single-node job (nsys profile torchrun --nproc-per-node N
// ...): every rank's process in one export, on one host clock, each on its
// own GPU. GenerateJobFile generates the ranks in lockstep as GenerateJob
// does (without clock offsets: the processes share the host's clock) and
// merges them: rank r becomes process JobTruth.Pids[r] (pids in a seeded
// order unrelated to the ranks) on device r, strings are shared, rows are
// in start order, and each process carries an NVTX mark "rank r" (the
// launcher's environment, which names no rank, stays with the file).

// processTables are the tables with one process's rows, and how their
// columns change when the process is renumbered.
var processTables = []string{
	schema.Processes, schema.ThreadNames.Name, schema.CUDADevice, schema.CUDAContextInfo, schema.CUDAStream,
	schema.Runtime.Name, schema.Kernel.Name, schema.Memcpy.Name, schema.Memset.Name,
	schema.Sync.Name, schema.GPUFault.Name, schema.CPUFault.Name, schema.NVTX.Name,
	schema.MemUsage.Name,
}

// stringCols are the columns that hold StringIds ids.
var stringCols = schema.StringIDColumns("mangledName", "jsonTextId")

// columnExpr is the expression that moves column c of table t (rows of
// rank file alias s) to process pid on device dev.
func columnExpr(t, c string, p int64, dev int) string {
	dG := (p - int64(procPidBase)) << 24
	dT := p - int64(procPidBase)
	q := `x."` + c + `"`
	switch {
	case stringCols[c]:
		return fmt.Sprintf(`CASE WHEN %[1]s IS NULL THEN NULL ELSE COALESCE((SELECT m.new FROM temp.strmap m WHERE m.old = %[1]s), %[1]s) END`, q)
	case c == "globalTid" || c == "endGlobalTid":
		return fmt.Sprintf(`%s + %d`, q, dG+dT)
	case c == "globalPid":
		return fmt.Sprintf(`%s + %d`, q, dG)
	case c == "pid" || c == "processId":
		return fmt.Sprint(p)
	case c == "deviceId" || c == "gpuId" || c == "cudaId":
		return fmt.Sprint(dev)
	case (c == "srcDeviceId" || c == "dstDeviceId") && t == schema.Memcpy.Name:
		return fmt.Sprintf(`CASE WHEN %s IS NULL THEN NULL ELSE %d END`, q, dev)
	}
	return q
}

const procPidBase = pid

// GenerateJobFile writes a job of jc.Ranks processes into the one trace
// path (TruthPath(path) holds its JobTruth). jc.OffsetNs and
// jc.ClockErrorNs do not apply: one file has one clock.
func GenerateJobFile(path string, jc JobConfig) (*JobTruth, error) {
	if jc.Rank.Shape.Processes > 1 {
		return nil, fmt.Errorf("a one-file job's ranks are processes: --processes must be 0 or 1")
	}
	if !jc.Rank.Overwrite {
		for _, p := range []string{path, TruthPath(path)} {
			if _, err := os.Stat(p); err == nil {
				return nil, fmt.Errorf("%s: %w", p, os.ErrExist)
			}
		}
	}
	jc.OffsetNs, jc.ClockErrorNs = 0, 0
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".umtrace-job-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	jt, err := GenerateJob(tmp, jc)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(jc.Rank.Seed, 0x70696473))
	perm := rng.Perm(jc.Ranks)
	jt.Pids = make([]int64, jc.Ranks)
	for r := range jt.Pids {
		jt.Pids[r] = 21000 + 137*int64(perm[r])
	}
	out := filepath.Join(tmp, "job.sqlite")
	if err := copyPath(RankFile(tmp, 0), out); err != nil {
		return nil, err
	}
	if err := mergeRanks(out, tmp, jt); err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	if err := os.Rename(out, path); err != nil {
		return nil, err
	}
	jt.Generator = "umtrace synth job v1 (one file)"
	jt.Files = []string{filepath.Base(path)}
	js, err := json.MarshalIndent(jt, "", "  ")
	if err != nil {
		return nil, err
	}
	return jt, os.WriteFile(TruthPath(path), append(js, '\n'), 0o644)
}

func copyPath(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// mergeRanks empties the process tables of out (a copy of rank 0's file)
// and fills them with every rank's rows, renumbered.
func mergeRanks(out, dir string, jt *JobTruth) error {
	db, err := sql.Open("sqlite3", "file:"+out)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // ATTACH and temp tables belong to one connection
	m := &merger{db: db, ctx: context.Background(), cols: map[string][]string{}}
	if m.have, err = m.tables("main"); err != nil {
		return err
	}
	if err := m.clear(); err != nil {
		return err
	}
	var lo, hi int64 = 1 << 62, -1 << 62
	for r := range jt.Pids {
		a, b, err := m.addRank(RankFile(dir, r), r, jt.Pids[r], r)
		if err != nil {
			return err
		}
		lo, hi = min(lo, a), max(hi, b)
	}
	return m.finish(lo, hi)
}

// merger merges rank files into one export (mergeRanks).
type merger struct {
	db   *sql.DB
	ctx  context.Context
	have map[string]bool     // the tables of the merged file
	cols map[string][]string // a table's columns (columns)
}

func (m *merger) exec(q string, args ...any) error {
	if _, err := m.db.ExecContext(m.ctx, q, args...); err != nil {
		return fmt.Errorf("%.80s: %w", q, err)
	}
	return nil
}

// execAll runs stmts in order, stopping at the first error.
func (m *merger) execAll(stmts []string) error {
	for _, q := range stmts {
		if err := m.exec(q); err != nil {
			return err
		}
	}
	return nil
}

// tables returns the tables of database db ("main" or an attached one).
func (m *merger) tables(db string) (map[string]bool, error) {
	rows, err := m.db.QueryContext(m.ctx, `SELECT name FROM `+db+`.sqlite_master WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		set[n] = true
	}
	return set, rows.Err()
}

// columns returns table t's columns (of the merged file's schema).
func (m *merger) columns(t string) ([]string, error) {
	if c, ok := m.cols[t]; ok {
		return c, nil
	}
	rows, err := m.db.QueryContext(m.ctx, `SELECT name FROM pragma_table_info(?)`, t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		m.cols[t] = append(m.cols[t], c)
	}
	return m.cols[t], rows.Err()
}

// clear empties the merged file's process tables (it starts as a copy of
// rank 0's) and drops its rank environment.
func (m *merger) clear() error {
	stmts := []string{"BEGIN"}
	for _, t := range append(slices.Clone(processTables), schema.GPU.Name) {
		if m.have[t] {
			stmts = append(stmts, `DELETE FROM main.`+t)
		}
	}
	stmts = append(stmts, `DELETE FROM `+schema.MetaDataCapture+` WHERE name LIKE 'PROCESS_%:ENVIRONMENT_VARIABLE' AND (value LIKE 'RANK=%' OR value LIKE 'WORLD_SIZE=%')`, "COMMIT")
	return m.execAll(stmts)
}

// addRank adds the rows of rank r's file as process p on device dev; it
// returns the rank's trace span.
func (m *merger) addRank(file string, r int, p int64, dev int) (lo, hi int64, err error) {
	if err := m.exec(`ATTACH DATABASE ? AS s`, file); err != nil {
		return 0, 0, err
	}
	theirs, err := m.tables("s")
	if err != nil {
		return 0, 0, err
	}
	// A table only some ranks have (no faults on a calm rank).
	for _, t := range processTables {
		if theirs[t] && !m.have[t] {
			var q string
			if err := m.db.QueryRowContext(m.ctx, `SELECT sql FROM s.sqlite_master WHERE type = 'table' AND name = ?`, t).Scan(&q); err != nil {
				return 0, 0, err
			}
			if err := m.exec(q); err != nil {
				return 0, 0, err
			}
			m.have[t] = true
		}
	}
	stmts, err := m.rankStmts(theirs, r, p, dev)
	if err != nil {
		return 0, 0, err
	}
	if err := m.execAll(append(append([]string{"BEGIN"}, stmts...), "COMMIT")); err != nil {
		return 0, 0, err
	}
	if err := m.db.QueryRowContext(m.ctx, `SELECT startTime, stopTime FROM s.`+schema.AnalysisDetails).Scan(&lo, &hi); err != nil {
		return 0, 0, err
	}
	return lo, hi, m.exec(`DETACH DATABASE s`)
}

// rankStmts are the statements that copy attached rank file s's rows
// (tables theirs) into the merged file as process p on device dev.
func (m *merger) rankStmts(theirs map[string]bool, r int, p int64, dev int) ([]string, error) {
	stmts := []string{
		`DROP TABLE IF EXISTS temp.strmap`,
		`CREATE TEMP TABLE strmap (old INTEGER PRIMARY KEY, new INTEGER)`,
		fmt.Sprintf(`INSERT INTO main.%[1]s SELECT (SELECT MAX(id) FROM main.%[1]s) + ROW_NUMBER() OVER (ORDER BY id), value
				FROM s.%[1]s WHERE value NOT IN (SELECT value FROM main.%[1]s)`, schema.StringIds.Name),
		fmt.Sprintf(`INSERT OR IGNORE INTO temp.strmap SELECT a.id, MIN(b.id) FROM s.%[1]s a JOIN main.%[1]s b ON b.value = a.value GROUP BY a.id`, schema.StringIds.Name),
	}
	for _, t := range processTables {
		if !theirs[t] {
			continue
		}
		cs, err := m.columns(t)
		if err != nil {
			return nil, err
		}
		e := make([]string, len(cs))
		for i, c := range cs {
			e[i] = columnExpr(t, c, p, dev)
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO main.%s (%s) SELECT %s FROM s.%s x`, t, quoteCols(cs), strings.Join(e, ", "), t))
	}
	// The process's GPU: rank 0's GPU, renumbered, on its own bus.
	gcols, err := m.columns(schema.GPU.Name)
	if err != nil {
		return nil, err
	}
	e := make([]string, len(gcols))
	for i, c := range gcols {
		switch c {
		case "id", "cuDevice":
			e[i] = fmt.Sprint(dev)
		case "busLocation":
			e[i] = fmt.Sprintf(`'0000:%02x:00.0'`, 0x18+dev)
		case "uuid":
			e[i] = fmt.Sprintf(`substr(x.uuid, 1, length(x.uuid) - 4) || '%04x'`, dev)
		default:
			e[i] = `x."` + c + `"`
		}
	}
	stmts = append(stmts, fmt.Sprintf(`INSERT INTO main.%[1]s (%[2]s) SELECT %[3]s FROM s.%[1]s x`, schema.GPU.Name, quoteCols(gcols), strings.Join(e, ", ")))
	mainTid := vmID | p<<24 | p
	stmts = append(stmts, fmt.Sprintf(`INSERT INTO main.%[1]s (start, "end", eventType, text, globalTid) SELECT MIN(start), NULL, 34, 'rank %[2]d', %[3]d FROM s.%[1]s`, schema.NVTX.Name, r, mainTid))
	return stmts, nil
}

// finish puts the rows in start order, as nsys writes them, and sets the
// trace span to lo..hi.
func (m *merger) finish(lo, hi int64) error {
	stmts := []string{"BEGIN"}
	for _, t := range processTables {
		if !m.have[t] || !slices.Contains(m.cols[t], "start") {
			continue
		}
		stmts = append(stmts, `CREATE TEMP TABLE sorted AS SELECT * FROM main.`+t+` ORDER BY start`, `DELETE FROM main.`+t,
			`INSERT INTO main.`+t+` SELECT * FROM temp.sorted ORDER BY rowid`, `DROP TABLE temp.sorted`)
	}
	stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET startTime = %d, stopTime = %d, duration = %d`, schema.AnalysisDetails, lo, hi, hi-lo), "COMMIT", "VACUUM")
	return m.execAll(stmts)
}

func quoteCols(cs []string) string {
	q := make([]string, len(cs))
	for i, c := range cs {
		q[i] = `"` + c + `"`
	}
	return strings.Join(q, ", ")
}
