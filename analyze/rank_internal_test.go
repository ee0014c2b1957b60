package analyze

import (
	"regexp"
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
		if got := RankFromText(s); got != want {
			t.Errorf("RankFromText(%q) = %d, the regexp alone says %d", s, got, want)
		}
	}
	if RankFromText("ran\u212a 4") != 4 || RankFromText("frank 3") != -1 || RankFromText("step 1 [rank 0]") != 0 {
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
