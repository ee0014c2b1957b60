package synth

import (
	"testing"
)

// TestShapes generates each preset small and checks, in the file, what
// the preset promises.
func TestShapes(t *testing.T) {
	for _, name := range Shapes {
		t.Run(name, func(t *testing.T) {
			cfg, err := WithShape(smallConfig(5), name)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Shape.KernelNames > 0 {
				cfg.Shape.KernelNames, cfg.Shape.NVTXNames = 300, 50
			}
			if cfg.Shape.Allocations > 0 {
				cfg.Shape.Allocations = 256
			}
			path, tr := generateT(t, cfg)
			db := openT(t, path)
			q := func(sql string) int64 { return queryInt(t, db, sql) }
			unsorted := q(`SELECT count(*) FROM (SELECT start < lag(start) OVER (ORDER BY rowid) AS inv FROM CUPTI_ACTIVITY_KIND_RUNTIME) WHERE inv`)
			if cfg.Shape.Shuffle != (unsorted > 0) {
				t.Errorf("shuffle %v, %d runtime rows out of start order", cfg.Shape.Shuffle, unsorted)
			}
			if n, want := q(`SELECT count(*) FROM PROCESSES`), int64(max(1, cfg.Shape.Processes)); n != want {
				t.Errorf("%d processes, want %d", n, want)
			}
			// Each process numbers its own correlation ids from 1.
			if n := q(`SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY correlationId HAVING count(DISTINCT globalTid & 0xFFFFFFFFFF000000) > 1)`); (n > 0) != (cfg.Shape.Processes > 1) {
				t.Errorf("%d correlation ids shared by processes", n)
			}
			// Every launch's kernel is in its own process.
			if n := q(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
				ON r.correlationId = k.correlationId AND k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000) WHERE r.start IS NULL`); n != 0 {
				t.Errorf("%d kernels without a launch in their process", n)
			}
			// The decoys' long and tiny kernels keep their catalog names.
			names := q(`SELECT count(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL`)
			long := q(`SELECT count(DISTINCT k.demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName WHERE length(s.value) >= 200`)
			if cfg.Shape.KernelNames > 0 && (names > int64(cfg.Shape.KernelNames)+2 || long < int64(cfg.Shape.KernelNames)) {
				t.Errorf("%d distinct kernel names (%d of 200+ bytes), want %d and the decoys' 2", names, long, cfg.Shape.KernelNames)
			}
			if cfg.Shape.NVTXPerKernel > 0 {
				if n := q(`SELECT count(DISTINCT text) FROM NVTX_EVENTS WHERE text NOT LIKE 'train_step %'`); n != int64(cfg.Shape.NVTXNames) {
					t.Errorf("%d distinct NVTX names, want %d", n, cfg.Shape.NVTXNames)
				}
			}
			if cfg.Shape.DeviceSync {
				if n := q(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value = 'cudaDeviceSynchronize_v3020'`); n != int64(cfg.Steps) {
					t.Errorf("%d cudaDeviceSynchronize calls, want one per step (%d)", n, cfg.Steps)
				}
			}
			memUsage := q(`SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS`)
			if cfg.Shape.NoAllocRecords != (memUsage == 0) {
				t.Errorf("%d memory-usage rows with no-alloc-records %v", memUsage, cfg.Shape.NoAllocRecords)
			}
			addrs := q(`SELECT count(DISTINCT address) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS`)
			faults := q(`SELECT count(*) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS`)
			if cfg.Shape.RandomPages {
				// Random pages of 256 allocations: nearly every fault on its own page.
				if addrs < faults*9/10 {
					t.Errorf("%d distinct fault addresses in %d faults", addrs, faults)
				}
				if n := q(`SELECT count(*) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS WHERE address % 4096 != 0`); n != 0 {
					t.Errorf("%d faults off a page boundary", n)
				}
			}
			if tr.TotalRows < tr.Config.EstimateRows()*8/10 || tr.TotalRows > tr.Config.EstimateRows()*12/10 {
				t.Errorf("%d rows, estimated %d", tr.TotalRows, tr.Config.EstimateRows())
			}
		})
	}
	if _, err := WithShape(DefaultConfig, "nope"); err == nil {
		t.Error("WithShape accepted an unknown shape")
	}
}

// TestShapeDeterministic checks that a shaped trace is the same for the
// same seed, shuffling included.
func TestShapeDeterministic(t *testing.T) {
	cfg, err := WithShape(smallConfig(6), "address-diverse")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shape.Allocations = 64
	p1, _ := generateT(t, cfg)
	p2, _ := generateT(t, cfg)
	if dumpAll(t, p1) != dumpAll(t, p2) {
		t.Error("same seed and shape, different rows")
	}
}
