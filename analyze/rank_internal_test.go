package analyze

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRankFromTextPrefilter: the fast "rank" test in front of the regexp
// changes no answer, also for mixed case, the Kelvin sign that (?i) folds
// to 'k', names that only nearly spell rank, and long template names.
func TestRankFromTextPrefilter(t *testing.T) {
	long := "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::BinaryFunctor<float, float, float, at::native::MulFunctor<float>>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)"
	cases := []string{
		"", "rank", "rank 3", "RANK=12", "Rank:7", "rAnK#2", "train rank_5 step", "ran\u212a 4", "RAN\u212a-9",
		"frank 3", "_rank 3", "prank1", "ranks 2", "ran k 2", "rak 1", "crankshaft 8", "nccl:all_reduce",
		"step 1 [rank 0]", long, long + " rank 11", "r", "ra", "ran", "rank ", "\u212a rank 5", "RANK\u212a 6",
	}
	for i := 0; i < 300; i++ {
		cases = append(cases, "step "+strconv.Itoa(i), "ProfilerStep#"+strconv.Itoa(i))
	}
	for _, s := range cases {
		want := -1
		if m := rankPat.FindStringSubmatch(s); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				want = n
			}
		}
		if got := rankFromText(s); got != want {
			t.Errorf("rankFromText(%q) = %d, the regexp alone says %d", s, got, want)
		}
	}
	if rankFromText("ran\u212a 4") != 4 || rankFromText("frank 3") != -1 || rankFromText("step 1 [rank 0]") != 0 {
		t.Error("the cases above do not test what they should")
	}
}

// TestDigitsToN: the step key equals the regexp replacement it replaced.
func TestDigitsToN(t *testing.T) {
	re := regexp.MustCompile(`[0-9]+`)
	for _, s := range []string{"", "7", "step", "step 12", "12 step 3", "ProfilerStep#41", "a1b22c333", "007", "x0", "0x",
		"train_step_00012_rank3", "日本1語22", "\xff9\xfe", "iter 1.5e10"} {
		if got, want := digitsToN(s), re.ReplaceAllString(s, "N"); got != want {
			t.Errorf("digitsToN(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestIsCollectiveRangeFold: the one-scan, any-case test agrees with
// lower-casing the name and searching for each word.
func TestIsCollectiveRangeFold(t *testing.T) {
	slow := func(name string) bool {
		if IsNCCLRange(name) {
			return true
		}
		l := strings.ToLower(name)
		for _, w := range [][]string{collectiveA, collectiveB, collectiveR} {
			for _, x := range w {
				if strings.Contains(l, x) {
					return true
				}
			}
		}
		return false
	}
	for _, n := range []string{"", "a", "nccl:all_reduce", "NCCLAllReduce", "DDP::AllReduce bucket 3", "xALL_GATHERy", "all_gathe",
		"reduce_Scatter", "ReduceScatter_tensor", "Barrier", "broadcas", "step 1 rank 0", "alltoal", "all_to_all_single",
		"ab", "aall_reduce", "bbarrier", "rreducescatter", "train_step 12", "Ärger all_reduce", "\\xffBROADCAST"} {
		if got, want := IsCollectiveRange(n), slow(n); got != want {
			t.Errorf("IsCollectiveRange(%q) = %v, want %v", n, got, want)
		}
	}
}

// TestBuildStepsOrder: the job's step table groups every rank's rows by
// step index in index order, rank order within a step, whether the
// indexes are dense (counting sort) or far apart (the stable sort).
func TestBuildStepsOrder(t *testing.T) {
	for _, far := range []int{3, 50_000_000} {
		rk := func(rank int, rows ...Step) *rankIn {
			return &rankIn{rank: rank, res: &Result{Steps: Steps{Rows: rows}}}
		}
		ranks := []*rankIn{
			rk(1, Step{Index: far, DurationNs: 40}, Step{Index: 0, DurationNs: 10}, Step{Index: 1, DurationNs: 30, Episode: 1}),
			rk(0, Step{Index: 1, DurationNs: 30}, Step{Index: 2, DurationNs: 5}),
		}
		jr := &JobResult{}
		jr.buildSteps(ranks)
		var got []string
		for _, s := range jr.Steps {
			got = append(got, fmt.Sprintf("%d:%d ranks, slowest %d (%d ns), storm %v", s.Step, s.Ranks, s.SlowestRank, s.SlowestNs, s.StormRanks))
		}
		want := []string{
			"0:1 ranks, slowest 1 (10 ns), storm []",
			"1:2 ranks, slowest 0 (30 ns), storm [1]",
			"2:1 ranks, slowest 0 (5 ns), storm []",
			fmt.Sprintf("%d:1 ranks, slowest 1 (40 ns), storm []", far),
		}
		if far == 3 {
			want = []string{want[0], want[1], want[2], "3:1 ranks, slowest 1 (40 ns), storm []"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("far index %d:\n got %q\nwant %q", far, got, want)
		}
		if len(jr.steps) != len(want) || jr.steps[1].MedianNs != 30 {
			t.Errorf("far index %d: %d steps by index, step 1 median %v", far, len(jr.steps), jr.steps[1].MedianNs)
		}
	}
}
