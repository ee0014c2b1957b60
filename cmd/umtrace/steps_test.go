package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestStepsArePersonsSteps lists, for every trace in testdata,
// ../shared/traces and ../shared/external, the steps a person would name:
// the NVTX range marking iterations and how many there are (and whether
// the first is a warm-up), the iterations inferred from the trace's
// periodic structure where no range marks them, or none. No trace may get
// an op or API range (MPI_Send, aten::..., ncclAllReduce) as its steps
// (issue 27).
func TestStepsArePersonsSteps(t *testing.T) {
	type want struct {
		rng           string // "" for no steps or inferred ones
		count, warmup int
		inferred      string // the evidence's mark of inferred steps
	}
	none := want{}
	// um_pingpong.cu runs 8 iterations of kernel, cudaStreamSynchronize
	// and a host pass over the pages (prefetch: a second sync after the
	// prefetch back to the host); no NVTX. The 7 iterations between the
	// 8 kernel syncs' returns are inferred.
	pingpong := want{count: 7, inferred: "8 cudaStreamSynchronize returns recur every"}
	pingpongPrefetch := want{count: 7, inferred: "16 cudaStreamSynchronize returns, 2 per iteration"}
	repro := func(warmup int) want { return want{rng: "step N", count: 6, warmup: warmup} }
	cases := map[string]want{
		"testdata/traces/um_pingpong_default.sqlite":  pingpong,
		"testdata/traces/um_pingpong_explicit.sqlite": pingpong,
		"testdata/traces/um_pingpong_prefetch.sqlite": pingpongPrefetch,
		// The reproducer wraps each of its 6 steps in "step N"; the first
		// step of explicit, pool and race does the one-off work (first
		// copies, the pool's growth) and takes over 1.5x the others.
		"testdata/reproducer/advise.sqlite":                repro(0),
		"testdata/reproducer/explicit.sqlite":              repro(1),
		"testdata/reproducer/free-in-loop.sqlite":          repro(0),
		"testdata/reproducer/managed.sqlite":               repro(0),
		"testdata/reproducer/oom.sqlite":                   repro(0),
		"testdata/reproducer/pool.sqlite":                  repro(1),
		"testdata/reproducer/prefetch.sqlite":              repro(0),
		"testdata/reproducer/race.sqlite":                  repro(1),
		"testdata/reproducer/two-streams.sqlite":           repro(0),
		"testdata/reproducer/multi/multi-gpu.rank0.sqlite": repro(1),
		"testdata/reproducer/multi/multi-gpu.rank1.sqlite": repro(1),
		// torch_mlp.py marks each of its 20 iterations "train_step N" (beside
		// "load_batch" and "forward_backward" inside it); the first one
		// (CUDA and cuBLAS initialization) is the warm-up.
		"shared:traces/torch_mlp_managed.sqlite":   {rng: "train_step N", count: 20, warmup: 1},
		"shared:traces/torch_mlp_device.sqlite":    {rng: "train_step N", count: 20, warmup: 1},
		"shared:traces/um_pingpong_default.sqlite": pingpong,
		// MPI_Send/MPI_Recv are MPI's own API ranges and "saxpy" covers
		// 0.1% of each loop iteration: no range marks iterations.
		"shared:external/nsys/pipit_saxpy-mpi-cuda_perlmutter_2022.2.1.sqlite": none,
		// Each NVTX range of cuda-recap occurs once.
		"shared:external/nsys/cuda-recap_2025.3.2_2gpu_nvtx_report1.sqlite": none,
		// k-means: each iteration launches its kernel and syncs its stream
		// three times (after the copies in, the kernel, the copy out),
		// every 36 ms: 50 iterations between 51 groups of syncs.
		"shared:external/nsys/kmeans-parallel_2020.5.1_report2.sqlite": {count: 50, inferred: "153 cuStreamSynchronize returns, 3 per iteration"},
		// CloverLeaf's time steps (one rank recorded): 25 synchronous
		// copies each (halo exchanges, reductions), every 32.5 ms: 10.
		"shared:external/nsys/pipit_cloverleaf-cuda_perlmutter_4gpu_2024.5.1.sqlite": {count: 10, inferred: "279 cudaMemcpy returns, 25 per iteration"},
	}
	// Every other external export has no NVTX ranges at all.
	ext, _ := filepath.Glob(testshared.Path("external", "nsys", "*.sqlite"))
	for _, f := range ext {
		k := "shared:external/nsys/" + filepath.Base(f)
		if _, ok := cases[k]; !ok && !strings.Contains(f, "emptytrace") {
			cases[k] = none
		}
	}
	for name, w := range cases {
		t.Run(filepath.Base(name), func(t *testing.T) {
			path := testshared.Testdata(strings.TrimPrefix(name, "testdata/"))
			if rest, ok := strings.CutPrefix(name, "shared:"); ok {
				path = testshared.Need(t, strings.Split(rest, "/")...)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			code, js, stderr := archRun("analyze", path, "-f", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var doc struct {
				Steps struct {
					Range       string `json:"range"`
					Count       int    `json:"count"`
					WarmupSteps int    `json:"warmup_steps"`
					Source      string `json:"source"`
					Confidence  string `json:"confidence"`
					Evidence    string `json:"evidence"`
				} `json:"steps"`
			}
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			s := doc.Steps
			if s.Range != w.rng || s.Count != w.count || s.WarmupSteps != w.warmup {
				t.Errorf("steps %q x%d (warm-up %d, %s), want %q x%d (warm-up %d)", s.Range, s.Count, s.WarmupSteps, s.Source, w.rng, w.count, w.warmup)
			}
			switch {
			case w.inferred != "":
				if s.Source != "inferred" || !strings.Contains(s.Evidence, w.inferred) || (s.Confidence != "medium" && s.Confidence != "low") {
					t.Errorf("inferred steps: source %q, %s confidence, evidence %q, want %q", s.Source, s.Confidence, s.Evidence, w.inferred)
				}
			case w.rng == "":
				if !strings.Contains(s.Source, "--step-range") {
					t.Errorf("no steps should say what to record: %q", s.Source)
				}
			case s.Confidence != "high":
				t.Errorf("confidence %q", s.Confidence)
			}
		})
	}
}
