package multirank_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/synth"
)

func runJob(t *testing.T, paths []string) *multirank.Result {
	t.Helper()
	var files []*analyze.File
	opts := analyze.DefaultOptions()
	opts.SplitProcesses = true
	for _, p := range paths {
		r, err := nsys.Open(p, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := analyze.AnalyzeFile(r, opts)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	jr, err := multirank.Analyze(files)
	if err != nil {
		t.Fatal(err)
	}
	return jr
}

// checkStraggler: the storm rank is named, only it storms, and the others'
// waits in the storm steps are attributed to it.
func checkStraggler(t *testing.T, jr *multirank.Result, stormRank int, wantSteps map[int]bool) {
	t.Helper()
	for _, r := range jr.Ranks {
		if (r.Verdict == analyze.VerdictStorm) != (r.Rank == stormRank) {
			t.Errorf("rank %d: verdict %s (storm rank %d)", r.Rank, r.Verdict, stormRank)
		}
	}
	if len(jr.Stragglers) != 1 || jr.Stragglers[0].Rank != stormRank {
		t.Fatalf("stragglers %+v, want rank %d alone", jr.Stragglers, stormRank)
	}
	for _, a := range jr.Attributions {
		if !wantSteps[a.Step] {
			t.Errorf("attribution in step %d, outside the storm", a.Step)
		}
		if len(a.Waiters) != len(jr.Ranks)-1 || a.WaitNs <= 0 {
			t.Errorf("step %d: waiters %+v", a.Step, a.Waiters)
		}
	}
	if len(jr.Attributions) < len(wantSteps)-1 {
		t.Errorf("%d attributions for %d storm steps", len(jr.Attributions), len(wantSteps))
	}
}

// TestJobSynth8Ranks: an 8-rank synth job with a storm on rank 3, clocks
// seconds apart, files in shuffled order, and (second case) session starts
// recorded with errors of seconds.
func TestJobSynth8Ranks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clockErr int64
	}{{"offsets", 0}, {"clock-errors", 1_300_000_000}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jc := synth.DefaultJobConfig()
			jc.ClockErrorNs = tc.clockErr
			truth, err := synth.GenerateJob(dir, jc)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for r := 0; r < jc.Ranks; r++ {
				paths = append(paths, synth.RankFile(dir, r))
			}
			rand.New(rand.NewPCG(7, 7)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
			jr := runJob(t, paths)
			steps := map[int]bool{}
			for _, e := range truth.Episodes {
				for s := e.FirstStep; s <= e.LastStep; s++ {
					steps[s] = true
				}
			}
			checkStraggler(t, jr, jc.StormRank, steps)
			// The attributed wait equals the planted one within 10%.
			var want, got int64
			for s := range steps {
				for r, w := range truth.WaitNs[s] {
					if r != jc.StormRank {
						want += w
					}
				}
			}
			got = jr.Stragglers[0].WaitNs
			if d := float64(got-want) / float64(want); d > 0.1 || d < -0.1 {
				t.Errorf("attributed wait %d ns, planted %d ns", got, want)
			}
			if jr.Clock.ResidualNs > 1_000_000 {
				t.Errorf("clock residual %d ns after alignment", jr.Clock.ResidualNs)
			}
			// Order of the inputs does not matter.
			slices := append([]string{}, paths...)
			for i, j := 0, len(slices)-1; i < j; i, j = i+1, j-1 {
				slices[i], slices[j] = slices[j], slices[i]
			}
			a, _ := json.Marshal(jr.Ranks)
			b, _ := json.Marshal(runJob(t, slices).Ranks)
			if !bytes.Equal(a, b) {
				t.Error("per-rank table depends on the input order")
			}
		})
	}
}

// TestJobSynthOneFile: the same 8-rank job written as one file of 8
// processes (one GPU each, one clock, pids unrelated to the ranks): the
// storm rank is named, the others' NCCL wait is charged to it, and the
// attribution matches the 8-file job's with clocks seconds apart, step for
// step.
func TestJobSynthOneFile(t *testing.T) {
	dir := t.TempDir()
	jc := synth.DefaultJobConfig()
	jc.StormRank = 5
	path := filepath.Join(dir, "job.sqlite")
	truth, err := synth.GenerateJobFile(path, jc)
	if err != nil {
		t.Fatal(err)
	}
	jr := runJob(t, []string{path})
	if len(jr.Ranks) != jc.Ranks || len(jr.Traces) != 1 || len(jr.Files) != 1 {
		t.Fatalf("%d ranks, %d whole-file analyses, files %v", len(jr.Ranks), len(jr.Traces), jr.Files)
	}
	for r, row := range jr.Ranks {
		if row.Rank != r || row.RankSource != "nvtx" || row.Pid != truth.Pids[r] || row.Device != int64(r) {
			t.Errorf("rank %d: %+v; want pid %d on GPU %d, rank from nvtx", r, row, truth.Pids[r], r)
		}
	}
	// The whole file's device and process tables: 8 of each, one storm.
	whole := jr.Traces[0]
	if len(whole.Devices) != jc.Ranks || len(whole.Processes) != jc.Ranks {
		t.Errorf("whole file: %d devices, %d processes", len(whole.Devices), len(whole.Processes))
	}
	for _, e := range whole.Episodes {
		if e.Pid != truth.Pids[jc.StormRank] || e.Device != int64(jc.StormRank) {
			t.Errorf("whole-file episode %d on pid %d GPU %d, want %d GPU %d", e.Index, e.Pid, e.Device, truth.Pids[jc.StormRank], jc.StormRank)
		}
	}
	steps := map[int]bool{}
	for _, e := range truth.Episodes {
		for s := e.FirstStep; s <= e.LastStep; s++ {
			steps[s] = true
		}
	}
	checkStraggler(t, jr, jc.StormRank, steps)
	var want int64
	for s := range steps {
		for r, w := range truth.WaitNs[s] {
			if r != jc.StormRank {
				want += w
			}
		}
	}
	if got := jr.Stragglers[0].WaitNs; abs(got-want) > want/10 {
		t.Errorf("attributed wait %d ns, planted %d ns", got, want)
	}
	if jr.Clock.ResidualNs != 0 {
		t.Errorf("one file, one clock: residual %d ns", jr.Clock.ResidualNs)
	}

	// The same job as 8 files with clocks 1.7 s apart, given shuffled.
	dir8 := t.TempDir()
	if _, err := synth.GenerateJob(dir8, jc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for r := 0; r < jc.Ranks; r++ {
		paths = append(paths, synth.RankFile(dir8, r))
	}
	rand.New(rand.NewPCG(3, 9)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	jr8 := runJob(t, paths)
	if len(jr8.Attributions) != len(jr.Attributions) {
		t.Fatalf("%d attributions in 8 files, %d in one", len(jr8.Attributions), len(jr.Attributions))
	}
	for i, a := range jr.Attributions {
		b := jr8.Attributions[i]
		if a.Step != b.Step || a.StragglerRank != b.StragglerRank || abs(a.WaitNs-b.WaitNs) > a.WaitNs/1000 {
			t.Errorf("attribution %d: one file step %d rank %d %d ns, 8 files step %d rank %d %d ns", i, a.Step, a.StragglerRank, a.WaitNs, b.Step, b.StragglerRank, b.WaitNs)
		}
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestJobReproducerTraces: the traces recorded on an H200 (docs/reproducer.md):
// two processes in one file, rank 1 storming, and the multi-gpu scenario
// dry-run as two processes (one file each) on one GPU.
func TestJobReproducerTraces(t *testing.T) {
	all := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true}
	jr := runJob(t, []string{testshared.Testdata("reproducer", "multi", "multi-process.sqlite")})
	if len(jr.Ranks) != 2 || jr.Ranks[1].RankSource != "nvtx" {
		t.Fatalf("ranks %+v", jr.Ranks)
	}
	checkStraggler(t, jr, 1, all)
	jr = runJob(t, []string{testshared.Testdata("reproducer", "multi", "multi-gpu.rank1.sqlite"), testshared.Testdata("reproducer", "multi", "multi-gpu.rank0.sqlite")})
	checkStraggler(t, jr, 1, all)
	if jr.Ranks[0].WaitOnOthersNs < 100_000_000 {
		t.Errorf("rank 0 waited %d ns for rank 1; the run showed a barrier P50 of 39 ms per step", jr.Ranks[0].WaitOnOthersNs)
	}
}

// TestJobSplitMatchesProcessSource: a file of several processes is read
// once, and each process's collector derived from the whole file's
// (analyzeRanks), instead of a pass per process; each rank's
// analysis must equal Analyze of the file restricted to that process
// (ProcessSource), and the whole-file analysis must equal Analyze of the
// file. Real: the H200 multi-process recording; synth: the address-diverse
// shape (4 processes, shuffled rows, overlapping correlation ids).
func TestJobSplitMatchesProcessSource(t *testing.T) {
	ad := addressDiverse(t, 7, 120, 8, 6)
	for _, path := range []string{testshared.Testdata("reproducer", "multi", "multi-process.sqlite"), ad} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			jr := runJob(t, []string{path})
			r, err := nsys.Open(path, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if len(jr.Traces) != 1 || len(jr.Results) != len(jr.Ranks) || len(jr.Ranks) < 2 {
				t.Fatalf("%d whole-file analyses, %d results for %d ranks", len(jr.Traces), len(jr.Results), len(jr.Ranks))
			}
			same := func(what string, got *analyze.Result, src ingest.Source) {
				want, err := analyze.Analyze(src, analyze.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(want)
				if !bytes.Equal(a, b) {
					t.Errorf("%s: the one pass gives another analysis than a pass of its own (%d vs %d JSON bytes)", what, len(a), len(b))
				}
			}
			same("whole file", jr.Traces[0], r)
			for i, row := range jr.Ranks {
				same(fmt.Sprintf("rank %d (pid %d)", row.Rank, row.Pid), jr.Results[i], analyze.ProcessSource(r, row.Pid))
				if jr.Results[i].Trace.Processes != 1 {
					t.Errorf("rank %d: %d processes in its analysis", row.Rank, jr.Results[i].Trace.Processes)
				}
			}
		})
	}
}

// countingSource counts the scans of each table of src.
type countingSource struct {
	src interface {
		ingest.Source
		ingest.ColumnScanner
		ingest.RowEstimator
	}
	mu    sync.Mutex
	scans map[string]int
}

func (c *countingSource) Info() *ingest.TraceInfo { return c.src.Info() }

func (c *countingSource) count(t *ingest.Table) {
	c.mu.Lock()
	c.scans[t.Name]++
	c.mu.Unlock()
}

func (c *countingSource) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	c.count(t)
	return c.src.Scan(t, fn)
}

func (c *countingSource) ScanColumns(t *ingest.Table, cols []string, fn func(arrow.RecordBatch) error) error {
	c.count(t)
	return c.src.ScanColumns(t, cols, fn)
}

func (c *countingSource) EstimateRows(t *ingest.Table) int64 { return c.src.EstimateRows(t) }

// TestJobOnePass: a file of four processes, analyzed whole and as a job of
// its processes, reads each of its tables once (it read them twice when
// the processes were split by a second pass), and its analyze.File hands
// the job everything it needs (no further read).
func TestJobOnePass(t *testing.T) {
	r, err := nsys.Open(addressDiverse(t, 3, 80, 6, 5), nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := &countingSource{src: r, scans: map[string]int{}}
	opts := analyze.DefaultOptions()
	opts.SplitProcesses, opts.SyncSamples = true, true
	f, err := analyze.AnalyzeFile(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := multirank.Analyze([]*analyze.File{f})
	if err != nil {
		t.Fatal(err)
	}
	if len(jr.Ranks) != 4 || len(jr.Traces) != 1 || jr.Traces[0] != f.Whole || len(f.Sync) == 0 {
		t.Fatalf("%d ranks, %d whole-file analyses (want 4, and the file's), samples of %d APIs", len(jr.Ranks), len(jr.Traces), len(f.Sync))
	}
	for _, tb := range []*ingest.Table{ingest.API, ingest.Kernel, ingest.Memcpy, ingest.Memset, ingest.Sync, ingest.GPUFault, ingest.CPUFault, ingest.NVTX} {
		if n := src.scans[tb.Name]; n != 1 {
			t.Errorf("table %s read %d times, want once", tb.Name, n)
		}
	}
}

// addressDiverse generates a small address-diverse synth trace (4
// processes, shuffled rows, overlapping correlation ids, two storms) and
// returns its path.
func addressDiverse(t *testing.T, seed uint64, steps, kernelsPerStep, episodeSteps int) string {
	t.Helper()
	small := synth.DefaultConfig
	small.Seed, small.Steps, small.KernelsPerStep, small.Episodes, small.EpisodeSteps, small.DecoySteps = seed, steps, kernelsPerStep, 2, episodeSteps, 3
	cfg, err := synth.WithShape(small, "address-diverse")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "address-diverse.sqlite")
	if _, err := synth.Generate(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}
