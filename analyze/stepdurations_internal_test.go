package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStepDurations holds stepDurations (one sort) to what it replaced:
// a warm-up test on its own sorted copy and summarize with nearest-rank
// percentiles on another.
func TestStepDurations(t *testing.T) {
	isWarmup := func(d []int64) bool {
		if len(d) < 3 {
			return false
		}
		rest := slices.Clone(d[1:])
		slices.Sort(rest)
		return float64(d[0]) > WarmupFactor*float64(rest[(len(rest)-1)/2])
	}
	nearest := func(d []int64) Dist {
		ds := summarize(d)
		if len(d) == 0 {
			return ds
		}
		s := slices.Clone(d)
		slices.Sort(s)
		rank := func(q float64) float64 { return float64(s[max(0, int(math.Ceil(q*float64(len(s))))-1)]) }
		ds.Median, ds.P95, ds.P99 = rank(0.5), rank(0.95), rank(0.99)
		return ds
	}
	r := rand.New(rand.NewPCG(1, 2))
	warmups := 0
	for _, n := range []int{1, 2, 3, 4, 5, 17, 100, 4095, 4097, 20000} {
		for trial := 0; trial < 20; trial++ {
			d := make([]int64, n)
			for i := range d {
				d[i] = 1000 + r.Int64N(int64(1+trial*100))
			}
			switch trial % 4 {
			case 1:
				d[0] *= 10 // a warm-up
			case 2:
				d[0] = 0 // the fastest first
			case 3:
				d[0] = d[n-1] // a tie
			}
			wantWarm := isWarmup(d)
			steady := d
			if wantWarm {
				steady = d[1:]
				warmups++
			}
			want := nearest(steady)
			in := slices.Clone(d)
			warm, got := stepDurations(d)
			if warm != wantWarm || got != want {
				t.Fatalf("n=%d trial %d: got warm-up %v %+v, want %v %+v", n, trial, warm, got, wantWarm, want)
			}
			if !slices.Equal(d, in) {
				t.Fatalf("n=%d trial %d: the durations were changed", n, trial)
			}
		}
	}
	if warmups == 0 {
		t.Fatal("no case had a warm-up")
	}
}

// TestMaxBucket: every duration's bucket fits the charts' arrays.
func TestMaxBucket(t *testing.T) {
	if b := bucketOf(math.MaxInt64); b != maxBucket {
		t.Fatalf("bucketOf(MaxInt64) = %d, maxBucket %d", b, maxBucket)
	}
	if b := bucketOf(math.MinInt64); b != 0 {
		t.Fatalf("bucketOf(MinInt64) = %d", b)
	}
}
