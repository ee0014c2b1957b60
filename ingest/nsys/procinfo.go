package nsys

import (
	"database/sql"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
	"strings"
)

// rankEnvVars are the launcher variables that name a process's rank, in
// the order they are preferred.
var rankEnvVars = []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK", "SLURM_LOCALID", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}

// readProcInfo fills the process names (PROCESSES) and the rank-related
// environment of the launched process (META_DATA_CAPTURE rows
// PROCESS_n:ENVIRONMENT_VARIABLE, value NAME="VALUE"). Both are optional:
// an export without them leaves the fields nil.
func (r *Reader) readProcInfo(set map[string]bool) {
	in := &r.info
	if set[schema.Processes] {
		if rows, err := r.db.Query(`SELECT pid, name FROM PROCESSES`); err == nil {
			m := map[int64]string{}
			for rows.Next() {
				var pid sql.NullInt64
				var name sql.NullString
				if rows.Scan(&pid, &name) == nil && pid.Valid {
					m[pid.Int64] = name.String
				}
			}
			rows.Close()
			if len(m) > 0 {
				in.ProcessNames = m
			}
		}
	}
	if set[schema.MetaDataCapture] {
		rows, err := r.db.Query(`SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_%:ENVIRONMENT_VARIABLE'`)
		if err != nil {
			return
		}
		env := map[string]string{}
		for rows.Next() {
			var v sql.NullString
			if rows.Scan(&v) != nil {
				continue
			}
			k, val, ok := strings.Cut(v.String, "=")
			if !ok {
				continue
			}
			for _, want := range rankEnvVars {
				if k == want {
					env[k] = strings.Trim(val, `"`)
				}
			}
		}
		rows.Close()
		if len(env) > 0 {
			in.LaunchEnv = env
		}
	}
}
