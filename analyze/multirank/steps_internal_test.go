package multirank

import (
	"fmt"
	"slices"
	"testing"

	"github.com/umtrace/umtrace/analyze"
)

// TestBuildStepsOrder: the job's step table groups every rank's rows by
// step index in index order, rank order within a step, whether the
// indexes are dense (counting sort) or far apart (the stable sort).
func TestBuildStepsOrder(t *testing.T) {
	for _, far := range []int{3, 50_000_000} {
		rk := func(rank int, rows ...analyze.Step) *rankIn {
			return &rankIn{rank: rank, res: &analyze.Result{Steps: analyze.Steps{Rows: rows}}}
		}
		ranks := []*rankIn{
			rk(1, analyze.Step{Index: far, DurationNs: 40}, analyze.Step{Index: 0, DurationNs: 10}, analyze.Step{Index: 1, DurationNs: 30, Episode: 1}),
			rk(0, analyze.Step{Index: 1, DurationNs: 30}, analyze.Step{Index: 2, DurationNs: 5}),
		}
		jr := &Result{}
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
