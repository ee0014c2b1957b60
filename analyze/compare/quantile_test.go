package compare

import (
	"math"
	"testing"
)

func TestHarrellDavis(t *testing.T) {
	// Reference: the Beta(q(n+1), (1-q)(n+1)) weights integrated numerically
	// (Simpson, 20000 panels per order statistic) in Python.
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 25, 30, 40, 60, 100}
	for _, c := range []struct{ q, est, se float64 }{
		{0.5, 13.001626079207284, 2.4299954547775435},
		{0.95, 75.69779239949105, 26.39222904231348},
	} {
		est, se, ok := HarrellDavis(x, c.q)
		if !ok || math.Abs(est-c.est) > 1e-3*c.est || math.Abs(se-c.se) > 1e-3*c.se {
			t.Errorf("q=%v: HD %v ± %v, want %v ± %v", c.q, est, se, c.est, c.se)
		}
	}
	if est, se, ok := HarrellDavis([]float64{7, 7, 7, 7}, 0.95); !ok || math.Abs(est-7) > 1e-12 || se > 1e-6 {
		t.Errorf("constant sample: %v ± %v", est, se)
	}
	if _, _, ok := HarrellDavis([]float64{1}, 0.5); ok {
		t.Error("one sample should not be estimable")
	}
}

// series is n values spread evenly over [lo, lo+span) with a tail: every
// 20th value is tail times larger, so P95 and P99 sit in the tail.
func series(n int, lo, span, tail float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = lo + span*float64(i)/float64(n)
		if i%20 == 19 {
			s[i] *= tail
		}
	}
	return toF64Sorted(s)
}

func toF64Sorted(s []float64) []float64 {
	out := append([]float64(nil), s...)
	for i := 1; i < len(out); i++ { // insertion sort keeps the test free of sort's ordering
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestQuantileRows(t *testing.T) {
	before := series(418, 1e6, 1e6, 3)  // cudaFree-like: 1-2 ms, every 20th call 3-6 ms
	after := series(300, 30e3, 20e3, 1) // 30-50 µs, no tail
	r := sampled("cudaFree P95", "ns", before, after, 0.95)
	if r.Test != "harrell_davis" || !r.Significant || r.Verdict != "improved" || *r.P >= 0.001 {
		t.Fatalf("a 99%% drop of P95 with n=418/300: %+v p=%v", r, *r.P)
	}
	if r.CILow == nil || r.CIHigh == nil || *r.CIHigh >= 0 || *r.CILow > *r.Change || *r.CIHigh < *r.Change {
		t.Errorf("interval [%v, %v] should hold the change %v and lie below 0", *r.CILow, *r.CIHigh, *r.Change)
	}
	// The case: the same drop seen in only 2 calls is not
	// "unchanged" but untested, with the samples it needs.
	r = sampled("cudaFree P95", "ns", before, after[:2], 0.95)
	if r.Verdict != "untested" || r.Significant || r.P != nil || r.MinN != 40 {
		t.Errorf("n=418/2: %+v", r)
	}
	// Same distribution: a P99 test says unchanged.
	r = sampled("x P99", "ns", series(400, 1e3, 1e3, 2), series(400, 1e3, 1e3, 2), 0.99)
	if r.Test != "harrell_davis" || r.Significant || r.Verdict != "unchanged" {
		t.Errorf("same samples: %+v", r)
	}
	if MinQuantileSamples(0.99) != 200 || MinQuantileSamples(0.95) != 40 || MinQuantileSamples(0.5) != 10 {
		t.Errorf("min samples %d %d %d", MinQuantileSamples(0.99), MinQuantileSamples(0.95), MinQuantileSamples(0.5))
	}
}

func TestMedianRows(t *testing.T) {
	a := []float64{10, 11, 12, 13, 14, 15}
	b := []float64{20, 21, 22, 23, 24, 25}
	r := sampled("x P50", "ns", a, b, 0.5)
	if r.Test != "mann_whitney_u" || !r.Significant || r.Verdict != "regressed" || r.EffectSize == nil || *r.EffectSize != 1 {
		t.Errorf("shifted samples: %+v", r)
	}
	r = sampled("x P50", "ns", a[:4], b[:4], 0.5)
	if r.Verdict != "untested" || r.MinN != MinRankSamples {
		t.Errorf("4 a side: %+v", r)
	}
	if d := CliffsDelta([]float64{1, 2, 3}, []float64{2, 2, 2}); math.Abs(d) > 1e-12 {
		t.Errorf("delta of a centred sample = %v", d)
	}
	if d := CliffsDelta([]float64{5, 6}, []float64{1, 2}); d != -1 {
		t.Errorf("delta = %v", d)
	}
	if roundP(0) == 0 {
		t.Error("a p-value that underflowed must not print as 0")
	}
}
