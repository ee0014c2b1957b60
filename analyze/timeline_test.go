package analyze_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestTimelineLanesPerProcess: a trace holding several processes gets one
// timeline lane per process; the lanes add up to the whole-trace bins,
// their faults equal GROUP BY process on the export, and only the storming
// process's lane is marked storm.
func TestTimelineLanesPerProcess(t *testing.T) {
	r, res := analyzetest.Open(t, testshared.Testdata("reproducer", "multi", "multi-process.sqlite"))
	tl := res.Timeline
	if len(tl.Lanes) != 2 || len(res.Processes) != 2 {
		t.Fatalf("%d lanes, %d processes; want 2 and 2", len(tl.Lanes), len(res.Processes))
	}
	gpu, cpu := map[int64]int64{}, map[int64]int64{}
	for _, row := range queryInts(t, r.DB(), `SELECT (globalPid >> 24) & 16777215, SUM(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS GROUP BY 1`) {
		gpu[row[0]] = row[1]
	}
	for _, row := range queryInts(t, r.DB(), `SELECT (globalPid >> 24) & 16777215, COUNT(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS GROUP BY 1`) {
		cpu[row[0]] = row[1]
	}
	stormPids := map[int64]bool{}
	for _, e := range res.Episodes {
		stormPids[e.Pid] = true
	}
	for i, l := range tl.Lanes {
		if l.Pid != res.Processes[i].Pid || len(l.Bins) != len(tl.Bins) {
			t.Fatalf("lane %d: pid %d with %d bins; process %d, %d bins", i, l.Pid, len(l.Bins), res.Processes[i].Pid, len(tl.Bins))
		}
		var g, c int64
		storm := false
		for _, b := range l.Bins {
			g += b.GPUFaults
			c += b.CPUFaults
			storm = storm || b.Storm
		}
		if g != gpu[l.Pid] || c != cpu[l.Pid] || g == 0 {
			t.Errorf("pid %d: lane faults %d GPU %d CPU, export %d / %d", l.Pid, g, c, gpu[l.Pid], cpu[l.Pid])
		}
		if storm != stormPids[l.Pid] {
			t.Errorf("pid %d: lane storm %v, episodes on it %v", l.Pid, storm, stormPids[l.Pid])
		}
	}
	checkLaneSums(t, tl)
	// One process: no lanes.
	if _, one := analyzetest.Open(t, testshared.Testdata("traces", "um_pingpong_default.sqlite")); len(one.Timeline.Lanes) != 0 {
		t.Errorf("single-process trace has %d lanes", len(one.Timeline.Lanes))
	}
}

// checkLaneSums checks that tl's lanes have the trace's bin edges and add
// up to its bins.
func checkLaneSums(t *testing.T, tl analyze.Timeline) {
	t.Helper()
	for _, l := range tl.Lanes {
		if len(l.Bins) != len(tl.Bins) {
			t.Fatalf("lane of pid %d has %d bins, the trace %d", l.Pid, len(l.Bins), len(tl.Bins))
		}
	}
	for i, b := range tl.Bins {
		var blocked, gf, cf, mig int64
		stalls, storm := 0, false
		for _, l := range tl.Lanes {
			x := l.Bins[i]
			if x.StartNs != b.StartNs {
				t.Fatalf("bin %d: lane starts at %d, trace bin at %d", i, x.StartNs, b.StartNs)
			}
			blocked, gf, cf, mig = blocked+x.BlockedNs, gf+x.GPUFaults, cf+x.CPUFaults, mig+x.DemandBytes
			stalls += x.Stalls
			storm = storm || x.Storm
		}
		if blocked != b.BlockedNs || gf != b.GPUFaults || cf != b.CPUFaults || mig != b.DemandBytes || stalls != b.Stalls || storm != b.Storm {
			t.Errorf("bin %d: lanes sum to %d ns %d/%d faults %d B %d stalls storm %v; trace bin %+v", i, blocked, gf, cf, mig, stalls, storm, b)
		}
	}
}

// TestTimelineLanesPerDevice: one process with several GPUs (public
// exports from 4-GPU and 2-GPU hosts) gets one timeline lane per GPU; the
// lanes add up to the whole-trace bins, each lane's fault-driven migration
// bytes per bin equal GROUP BY deviceId and bin over the export's UM
// migrations, and the host-blocked time goes to the one GPU the process's
// streams ran on (no host lane: these traces have no CPU faults).
func TestTimelineLanesPerDevice(t *testing.T) {
	for _, name := range []string{"csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite", "cuda-course_2024.4.1_2gpu_um-memcpy_report1.sqlite"} {
		t.Run(name, func(t *testing.T) {
			r, res := analyzetest.Open(t, testshared.Need(t, "external", "nsys", name))
			tl := res.Timeline
			var gpus []int64
			for _, row := range queryInts(t, r.DB(), `SELECT DISTINCT id FROM TARGET_INFO_GPU ORDER BY 1`) {
				gpus = append(gpus, row[0])
			}
			if len(res.Processes) != 1 || len(gpus) < 2 || len(tl.Lanes) != len(gpus) {
				t.Fatalf("%d processes, %d GPUs listed, %d lanes; want 1, several, one per GPU", len(res.Processes), len(gpus), len(tl.Lanes))
			}
			pid := res.Processes[0].Pid
			for i, l := range tl.Lanes {
				if l.Device == nil || *l.Device != gpus[i] || l.Pid != pid {
					t.Fatalf("lane %d: device %v pid %d; want GPU %d, pid %d", i, l.Device, l.Pid, gpus[i], pid)
				}
			}
			checkLaneSums(t, tl)
			want := map[[2]int64]int64{}
			var total int64
			for _, row := range queryInts(t, r.DB(), fmt.Sprintf(`SELECT deviceId, MIN(MAX((start - %d) / %d, 0), %d), SUM(bytes)
				FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind BETWEEN 11 AND 13 AND migrationCause IN (2, 3, 4) GROUP BY 1, 2`,
				tl.StartNs, tl.BinNs, len(tl.Bins)-1)) {
				want[[2]int64{row[0], row[1]}] = row[2]
				total += row[2]
			}
			if total == 0 {
				t.Fatal("no fault-driven migrations in the export")
			}
			kernelDevs := queryInts(t, r.DB(), `SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL`)
			if len(kernelDevs) != 1 {
				t.Fatalf("kernels on %d devices; the test expects one", len(kernelDevs))
			}
			var blocked int64
			for _, b := range tl.Bins {
				blocked += b.BlockedNs
			}
			if blocked == 0 {
				t.Fatal("no host-blocked time")
			}
			for _, l := range tl.Lanes {
				var lb int64
				for i, b := range l.Bins {
					if w := want[[2]int64{*l.Device, int64(i)}]; b.DemandBytes != w {
						t.Errorf("GPU %d bin %d: %d B fault-driven migration, export %d B", *l.Device, i, b.DemandBytes, w)
					}
					lb += b.BlockedNs
				}
				if w := map[bool]int64{true: blocked}[*l.Device == kernelDevs[0][0]]; lb != w {
					t.Errorf("GPU %d: %d ns host-blocked; want %d (the kernels ran on GPU %d)", *l.Device, lb, w, kernelDevs[0][0])
				}
			}
		})
	}
}

// TestTimelineLanesRelabelled: the public exports above ran on one GPU of
// several; copies of them with part of the work relabelled onto GPU 1 by
// SQL (later migrations of csc746; later kernels of CloverLeaf, on a
// stream of their own) exercise two GPUs with work: each lane's
// fault-driven migration bytes per bin equal GROUP BY deviceId over the
// copy, calls that synced a stream land on that stream's GPU, and device-
// wide syncs (cudaDeviceSynchronize, whose GPU is not recorded) make the
// host lane.
func TestTimelineLanesRelabelled(t *testing.T) {
	relabel := func(t *testing.T, name, update string) (*sql.DB, analyze.Timeline, *analyze.Result) {
		src := testshared.Need(t, "external", "nsys", name)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite3", p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Exec(update)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			t.Fatalf("%s: nothing relabelled", update)
		}
		db.Close()
		r, ar := analyzetest.Open(t, p)
		checkLaneSums(t, ar.Timeline)
		return r.DB(), ar.Timeline, ar
	}
	lane := func(tl analyze.Timeline, dev int64) *analyze.TimelineLane {
		for i := range tl.Lanes {
			if d := tl.Lanes[i].Device; d != nil && *d == dev {
				return &tl.Lanes[i]
			}
		}
		return nil
	}
	total := func(bins []analyze.TimelineBin, f func(analyze.TimelineBin) int64) (s int64) {
		for _, b := range bins {
			s += f(b)
		}
		return s
	}
	blocked := func(b analyze.TimelineBin) int64 { return b.BlockedNs }
	t.Run("migrations", func(t *testing.T) {
		db, tl, _ := relabel(t, "csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite",
			`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET deviceId = 1 WHERE copyKind BETWEEN 11 AND 13 AND start >= (SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM CUPTI_ACTIVITY_KIND_MEMCPY))`)
		want := map[[2]int64]int64{}
		devs := map[int64]bool{}
		for _, row := range queryInts(t, db, fmt.Sprintf(`SELECT deviceId, MIN(MAX((start - %d) / %d, 0), %d), SUM(bytes)
			FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind BETWEEN 11 AND 13 AND migrationCause IN (2, 3, 4) GROUP BY 1, 2`,
			tl.StartNs, tl.BinNs, len(tl.Bins)-1)) {
			want[[2]int64{row[0], row[1]}] = row[2]
			devs[row[0]] = true
		}
		if len(devs) != 2 {
			t.Fatalf("migrations on %d devices after relabelling", len(devs))
		}
		for _, l := range tl.Lanes {
			for i, b := range l.Bins {
				if w := want[[2]int64{*l.Device, int64(i)}]; b.DemandBytes != w {
					t.Errorf("GPU %d bin %d: %d B fault-driven migration, export %d B", *l.Device, i, b.DemandBytes, w)
				}
			}
		}
		// The kernel ran on GPU 0 only: it takes every call.
		if g0 := lane(tl, 0); g0 == nil || total(g0.Bins, blocked) != total(tl.Bins, blocked) || lane(tl, analyze.HostLane) != nil {
			t.Errorf("host-blocked time not all on GPU 0, or a host lane")
		}
	})
	t.Run("streams", func(t *testing.T) {
		db, tl, _ := relabel(t, "pipit_cloverleaf-cuda_perlmutter_4gpu_2024.5.1.sqlite",
			`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1, streamId = 1013 WHERE start >= (SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL))`)
		g0, g1, host := lane(tl, 0), lane(tl, 1), lane(tl, analyze.HostLane)
		if g0 == nil || g1 == nil || host == nil {
			t.Fatalf("lanes %+v: want GPU 0, GPU 1 and the host lane", tl.Lanes)
		}
		// Device-wide syncs: the host lane's time is at least theirs
		// (clipped to the trace span, which holds them).
		var syncNs int64
		for _, row := range queryInts(t, db, `SELECT SUM(r."end" - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%'`) {
			syncNs = row[0]
		}
		if h := total(host.Bins, blocked); syncNs == 0 || h < syncNs {
			t.Errorf("host lane %d ns blocked, cudaDeviceSynchronize %d ns", h, syncNs)
		}
		// No call synced the relabelled stream; the copies' stream is GPU 0's.
		if b := total(g1.Bins, blocked); b != 0 {
			t.Errorf("GPU 1: %d ns host-blocked; no call synced its stream", b)
		}
		if total(g0.Bins, blocked) == 0 {
			t.Errorf("GPU 0: no host-blocked time; the synchronous cudaMemcpy calls copied on its stream")
		}
	})
}
