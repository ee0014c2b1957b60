package analyze

import (
	"math/rand/v2"
	"testing"
)

// TestPeriodicNeverFromNoise: marks at random moments (gaps uniform over
// 1-60 ms, or exponential about 20 ms), 6 to 300 of them, never make a
// period: 2,000 sequences, no iterations inferred.
func TestPeriodicNeverFromNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	for k := range 2000 {
		n := 6 + rng.IntN(295)
		ts := make([]int64, n)
		var at int64
		for i := range ts {
			if k%2 == 0 {
				at += 1_000_000 + rng.Int64N(59_000_000)
			} else {
				at += 1 + int64(rng.ExpFloat64()*20e6)
			}
			ts[i] = at
		}
		if b, lag, sp, per, ok := periodic(ts); ok {
			t.Fatalf("sequence %d (%d marks): %d iterations of %d marks, period %.0f ns, spread %.3f from noise", k, n, len(b)-1, lag, per, sp)
		}
		if b, lag, sp, per, ok := periodicSegment(ts); ok {
			t.Fatalf("sequence %d (%d marks): a segment of %d iterations of %d marks, period %.0f ns, spread %.3f from noise", k, n, len(b)-1, lag, per, sp)
		}
	}
}

// TestPeriodicFindsLoops: a loop of 1 to 6 marks per iteration at fixed
// offsets, every iteration 20 ms with 2% jitter, and a first iteration
// three times as long (warm-up), is found with its marks per iteration.
func TestPeriodicFindsLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for m := 1; m <= 6; m++ {
		offs := []int64{0}
		for len(offs) < m {
			offs = append(offs, offs[len(offs)-1]+1_000_000+rng.Int64N(2_000_000))
		}
		var ts []int64
		at := int64(0)
		for i := range 30 {
			for _, o := range offs {
				ts = append(ts, at+o)
			}
			d := int64(20_000_000)
			if i == 0 {
				d *= 3
			}
			at += d + rng.Int64N(800_000) - 400_000
		}
		b, lag, _, per, ok := periodic(ts)
		if !ok || lag != m || len(b) < 29 || per < 19e6 || per > 21e6 {
			t.Errorf("%d marks per iteration: found %v, %d per iteration, %d iterations of %.0f ns", m, ok, lag, len(b)-1, per)
		}
	}
}

// TestPeriodicSegment: a burst of start-up syncs (52 marks 0.1-0.7 ms
// apart, as pinning a list of batches gives), a 333 ms first iteration,
// then 9 iterations of 79 ms, then 3 teardown syncs: the loop is found
// with its first (warm-up) iteration, 10 in all, as hf_managed's
// recording has it; the burst alone or a loop of too few iterations is
// not.
func TestPeriodicSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	var ts []int64
	at := int64(9_321_000_000)
	for range 52 {
		at += 100_000 + rng.Int64N(600_000)
		ts = append(ts, at)
	}
	warm := at
	at += 333_000_000
	loop := at
	ts = append(ts, at)
	for range 9 {
		at += 78_000_000 + rng.Int64N(4_000_000)
		ts = append(ts, at)
	}
	for range 3 {
		at += 200_000
		ts = append(ts, at)
	}
	b, lag, _, per, ok := periodicSegment(ts)
	if !ok || lag != 1 || len(b)-1 != 10 || b[0] != warm || b[1] != loop || per < 78e6 || per > 82e6 {
		t.Fatalf("got ok %v, %d iterations of %d marks, period %.0f ns, first %d (want 10 of 1, from %d, then %d)", ok, len(b)-1, lag, per, b[0], warm, loop)
	}
	if _, _, _, _, ok := periodicSegment(ts[:52]); ok {
		t.Error("the start-up burst alone gave iterations")
	}
	if _, _, _, _, ok := periodicSegment(ts[:56]); ok {
		t.Error("3 loop iterations gave iterations")
	}
}

// TestPeriodicSegmentLongJitteryLoop: the marks of the real large trace
// (scripts/bigtrace/record.sh, ITERS=300: cudaDeviceSynchronize returns of
// a GPT-2 loop on managed memory): a 442 ms start-up, 300 iterations of 82
// ms whose storms stretch a few to 96 ms (17% over), then two teardown
// syncs 37 ms and 0 ms apart. The loop is found, 300 iterations with the
// first a warm-up; the same loop of 20 iterations is not (a short run is
// held to 10%), nor are 300 random gaps of 60-100 ms.
func TestPeriodicSegmentLongJitteryLoop(t *testing.T) {
	loop := func(iters int, rng *rand.Rand) []int64 {
		ts := []int64{0, 441_800_000}
		at := ts[1]
		for i := 0; i < iters; i++ {
			d := int64(79_800_000 + rng.Int64N(6_000_000))
			switch {
			case i == 0:
				d = 105_400_000
			case i%20 == 7:
				d = 91_000_000 + rng.Int64N(5_000_000)
			}
			at += d
			ts = append(ts, at)
		}
		return append(ts, at+37_000_000, at+37_000_100)
	}
	rng := rand.New(rand.NewPCG(28, 1))
	b, lag, sp, per, ok := periodicSegment(loop(300, rng))
	if !ok || lag != 1 || len(b)-1 != 301 || b[0] != 0 {
		t.Fatalf("300-iteration loop: ok %v, %d iterations of %d marks (period %.0f, spread %.3f, bounds from %v); want 301 from 0: a 442 ms warm-up and 300",
			ok, len(b)-1, lag, per, sp, b[:min(1, len(b))])
	}
	if b, _, _, _, ok := periodicSegment(loop(20, rng)); ok {
		t.Errorf("20-iteration jittery loop: %d iterations found; a short loop is held to 10%%", len(b)-1)
	}
	ts := []int64{0}
	for i := 0; i < 300; i++ {
		ts = append(ts, ts[len(ts)-1]+60_000_000+rng.Int64N(40_000_000))
	}
	if b, _, sp, _, ok := periodicSegment(ts); ok {
		t.Errorf("random 60-100 ms gaps: %d iterations at spread %.3f", len(b)-1, sp)
	}
}
