package synth_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/synth"
)

// TestJobAttributionAccuracy scores straggler attribution over generated
// jobs of several rank counts, seeds and storm ranks, written as rank
// files (given in shuffled order, clocks seconds apart, some with session
// starts recorded seconds off) or as one file of several processes. Per
// job: the storm rank alone is named and alone storms; every attribution
// lies in a planted storm step (or the step next to one, where the storm
// rank arrived last); the wait charged to it is within 10 % of
// the planted wait (truth wait_ns: last arrival − each rank's arrival, in
// the storm steps), and so is each waiting rank's own share.
func TestJobAttributionAccuracy(t *testing.T) {
	cases := []struct {
		ranks, storm int
		seed         uint64
		oneFile      bool
		clockErrNs   int64
	}{
		{2, 1, 11, false, 0}, {2, 0, 12, true, 0},
		{3, 0, 13, false, 900_000_000}, {4, 2, 14, true, 0},
		{4, 3, 15, false, 0}, {5, 4, 16, true, 0},
		{8, 6, 17, false, 1_300_000_000}, {8, 1, 18, true, 0},
	}
	var jobs, named, ranksOK, ranksAll int
	var worst float64
	for _, tc := range cases {
		layout := "files"
		if tc.oneFile {
			layout = "one-file"
		}
		t.Run(fmt.Sprintf("%d-ranks-storm-%d-seed-%d-%s", tc.ranks, tc.storm, tc.seed, layout), func(t *testing.T) {
			jc := synth.DefaultJobConfig()
			jc.Ranks, jc.StormRank, jc.ClockErrorNs = tc.ranks, tc.storm, tc.clockErrNs
			jc.Rank.Seed = tc.seed
			dir := t.TempDir()
			var paths []string
			var truth *synth.JobTruth
			var err error
			if tc.oneFile {
				p := filepath.Join(dir, "job.sqlite")
				truth, err = synth.GenerateJobFile(p, jc)
				paths = []string{p}
			} else {
				truth, err = synth.GenerateJob(dir, jc)
				for r := 0; r < tc.ranks; r++ {
					paths = append(paths, synth.RankFile(dir, r))
				}
				rand.New(rand.NewPCG(tc.seed, 1)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
			}
			if err != nil {
				t.Fatal(err)
			}
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
			jobs++
			if len(jr.Ranks) != tc.ranks {
				t.Fatalf("%d ranks found, %d planted", len(jr.Ranks), tc.ranks)
			}
			steps := map[int]bool{}
			for _, e := range truth.Episodes {
				for s := e.FirstStep; s <= e.LastStep; s++ {
					steps[s] = true
				}
			}
			if len(steps) == 0 {
				t.Fatal("no storm steps planted")
			}
			want := make([]int64, tc.ranks)
			var wantAll int64
			for s := range steps {
				for r, w := range truth.WaitNs[s] {
					if r != tc.storm {
						want[r] += w
						wantAll += w
					}
				}
			}
			for _, r := range jr.Ranks {
				if (r.Verdict == analyze.VerdictStorm) != (r.Rank == tc.storm) {
					t.Errorf("rank %d: verdict %s, storm planted on rank %d", r.Rank, r.Verdict, tc.storm)
				}
			}
			if len(jr.Stragglers) != 1 || jr.Stragglers[0].Rank != tc.storm {
				t.Fatalf("stragglers %+v, want rank %d alone", jr.Stragglers, tc.storm)
			}
			named++
			// An episode's detected edges may be off by one step (as in
			// TestDetectionAccuracy): an attribution in the step just
			// before or after the storm is right when the storm rank was
			// indeed the last to arrive there.
			edge := func(s int) bool {
				return (steps[s-1] || steps[s+1]) && s >= 0 && s < len(truth.LastRank) && truth.LastRank[s] == tc.storm
			}
			for _, a := range jr.Attributions {
				if !steps[a.Step] && !edge(a.Step) {
					t.Errorf("attribution in step %d, outside the planted storm: %+v; planted %+v", a.Step, a, truth.Episodes)
				}
			}
			rel := func(got, want int64) float64 { return math.Abs(float64(got-want)) / float64(want) }
			if e := rel(jr.Stragglers[0].WaitNs, wantAll); e > 0.1 {
				t.Errorf("wait charged to rank %d: %d ns, planted %d ns (%.1f %% off)", tc.storm, jr.Stragglers[0].WaitNs, wantAll, 100*e)
			} else {
				worst = max(worst, e)
			}
			for _, r := range jr.Ranks {
				if r.Rank == tc.storm {
					if r.WaitOnOthersNs != 0 {
						t.Errorf("storm rank %d waited %d ns for others", r.Rank, r.WaitOnOthersNs)
					}
					continue
				}
				ranksAll++
				if e := rel(r.WaitOnOthersNs, want[r.Rank]); e > 0.1 {
					t.Errorf("rank %d: waited %d ns for rank %d, planted %d ns (%.1f %% off)", r.Rank, r.WaitOnOthersNs, tc.storm, want[r.Rank], 100*e)
				} else {
					ranksOK++
					worst = max(worst, e)
				}
			}
		})
	}
	t.Logf("%d jobs: storm rank named in %d; %d of %d waiting ranks' attributed wait within 10 %% of the planted (worst %.2f %%)", jobs, named, ranksOK, ranksAll, 100*worst)
}
