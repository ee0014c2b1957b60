package analyze_test

import (
	"database/sql"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestDevicesMatchGroupBy checks the per-device table of the public
// multi-GPU exports against GROUP BY deviceId queries on the same files:
// kernels and kernel time, UM migration bytes by direction, ordinary copy
// bytes, GPU faults, and the device list (TARGET_INFO_GPU plus any device
// with activity).
func TestDevicesMatchGroupBy(t *testing.T) {
	type file struct {
		path  []string
		multi bool
	}
	var files []file
	for _, n := range []string{
		"csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite",
		"pipit_cloverleaf-cuda_perlmutter_4gpu_2024.5.1.sqlite",
		"cuda-course_2024.4.1_2gpu_um-memcpy_report1.sqlite",
		"cuda-recap_2025.3.2_2gpu_nvtx_report1.sqlite",
	} {
		files = append(files, file{[]string{"external", "nsys", n}, true})
	}
	// Single-process, single-GPU traces get one row each, and every
	// episode names that process and GPU.
	for _, n := range []string{"um_pingpong_default.sqlite", "torch_mlp_managed.sqlite"} {
		files = append(files, file{[]string{"traces", n}, false})
	}
	for _, f := range files {
		name := f.path[len(f.path)-1]
		t.Run(name, func(t *testing.T) {
			path := testshared.Need(t, f.path...)
			r, res := analyzetest.Open(t, path)
			db := r.DB()
			gpuIDs := queryInts(t, db, `SELECT COUNT(DISTINCT id) FROM TARGET_INFO_GPU`)
			if len(res.Devices) < int(gpuIDs[0][0]) || (len(res.Devices) < 2) == f.multi {
				t.Fatalf("%d devices reported, TARGET_INFO_GPU lists %d", len(res.Devices), gpuIDs[0][0])
			}
			byID := map[int64]analyze.Device{}
			for _, d := range res.Devices {
				byID[d.ID] = d
			}
			type fig struct{ kernels, kernelNs, um11, um12, copies, faults int64 }
			want := map[int64]*fig{}
			get := func(id int64) *fig {
				if want[id] == nil {
					want[id] = &fig{}
				}
				return want[id]
			}
			for _, row := range queryInts(t, db, `SELECT deviceId, COUNT(*), SUM("end"-start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId`) {
				f := get(row[0])
				f.kernels, f.kernelNs = row[1], row[2]
			}
			for _, row := range queryInts(t, db, `SELECT deviceId, copyKind, SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY deviceId, copyKind`) {
				f := get(row[0])
				switch row[1] {
				case 11:
					f.um11 += row[2]
				case 12:
					f.um12 += row[2]
				default:
					f.copies += row[2]
				}
			}
			if hasTable(t, db, "CUDA_UM_GPU_PAGE_FAULT_EVENTS") {
				for _, row := range queryInts(t, db, `SELECT deviceId, SUM(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS GROUP BY deviceId`) {
					get(row[0]).faults = row[1]
				}
			}
			for _, row := range queryInts(t, db, `SELECT DISTINCT id FROM TARGET_INFO_GPU`) {
				get(row[0])
			}
			if len(want) != len(res.Devices) {
				t.Errorf("%d devices reported, SQLite has %d", len(res.Devices), len(want))
			}
			active := 0
			for id, w := range want {
				d, ok := byID[id]
				if !ok {
					t.Errorf("device %d missing", id)
					continue
				}
				var um11, um12, copies int64
				for _, m := range d.Migrations {
					switch m.Direction {
					case "HtoD":
						um11 += m.Bytes
					case "DtoH":
						um12 += m.Bytes
					}
				}
				for _, c := range d.CopyBytes {
					copies += c.Count
				}
				got := fig{d.Kernels, d.KernelNs, um11, um12, copies, d.GPUFaults}
				if got != *w {
					t.Errorf("device %d: got %+v, GROUP BY deviceId gives %+v", id, got, *w)
				}
				if w.kernels > 0 {
					active++
				}
			}
			if active == 0 {
				t.Error("no device with kernels: the test checks nothing")
			}
			procs := queryInts(t, db, `SELECT COUNT(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL`)
			if len(res.Processes) < int(procs[0][0]) {
				t.Errorf("%d processes reported, kernels come from %d", len(res.Processes), procs[0][0])
			}
			if f.multi {
				return
			}
			pids := queryInts(t, db, `SELECT DISTINCT globalTid / 16777216 % 16777216 FROM CUPTI_ACTIVITY_KIND_RUNTIME`)
			if len(pids) != 1 || len(res.Processes) != 1 || res.Processes[0].Pid != pids[0][0] || len(res.Episodes) == 0 {
				t.Fatalf("processes %+v, SQLite pids %v, %d episodes", res.Processes, pids, len(res.Episodes))
			}
			for _, e := range append(res.Episodes, res.Isolated...) {
				if e.Pid != pids[0][0] || e.Device != res.Devices[0].ID {
					t.Errorf("episode %d: pid %d device %d, want %d and %d", e.Index, e.Pid, e.Device, pids[0][0], res.Devices[0].ID)
				}
			}
			if p := res.Processes[0]; p.StormNs != res.Headline.StormTimeNs || p.Episodes != len(res.Episodes) || res.Devices[0].StormNs != res.Headline.StormTimeNs {
				t.Errorf("storm time: process %d ns in %d episodes, device %d ns; headline %d ns in %d", p.StormNs, p.Episodes, res.Devices[0].StormNs, res.Headline.StormTimeNs, len(res.Episodes))
			}
		})
	}
}

func hasTable(t *testing.T, db *sql.DB, name string) bool {
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name=?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func queryInts(t *testing.T, db *sql.DB, q string) [][]int64 {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]int64
	for rows.Next() {
		vals := make([]sql.NullInt64, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]int64, len(cols))
		for i, v := range vals {
			row[i] = v.Int64
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
