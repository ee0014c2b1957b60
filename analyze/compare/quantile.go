package compare

import (
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// HarrellDavis returns the Harrell-Davis estimate of the q-quantile of
// sorted s and its Maritz-Jarrett standard error.
//
// The estimate is a weighted sum of all order statistics, the weights being
// the mass a Beta(q(n+1), (1-q)(n+1)) puts on [(i-1)/n, i/n]; the standard
// error is the square root of the weighted second moment minus the squared
// estimate (Maritz and Jarrett 1978, Wilcox "Introduction to Robust
// Estimation", 3.5). Both are deterministic: the same samples give the same
// bytes, which bootstrap intervals would not without a fixed seed.
// ok is false for fewer than 2 samples.
func HarrellDavis(s []float64, q float64) (est, se float64, ok bool) {
	n := len(s)
	if n < 2 || q <= 0 || q >= 1 {
		return 0, 0, false
	}
	a, b := q*float64(n+1), (1-q)*float64(n+1)
	var c1, c2 float64
	prev := 0.0
	for i := 1; i <= n; i++ {
		cur := 1.0
		if i < n {
			cur = mathext.RegIncBeta(a, b, float64(i)/float64(n))
		}
		w := cur - prev
		prev = cur
		if w == 0 {
			continue
		}
		c1 += w * s[i-1]
		c2 += w * s[i-1] * s[i-1]
	}
	v := c2 - c1*c1
	if v < 0 { // rounding when every weighted value is the same
		v = 0
	}
	return c1, math.Sqrt(v), true
}

// QuantileTest tests whether the q-quantiles of sorted a and b differ: the
// difference of their Harrell-Davis estimates over the root sum of squared
// Maritz-Jarrett errors, two-sided against the unit normal. It gives the
// estimated change (b - a), its 95% interval and the p-value. ok is false
// when either side has fewer samples than MinQuantileSamples(q) or neither
// estimate has any spread.
func QuantileTest(a, b []float64, q float64) (change, lo, hi, p float64, ok bool) {
	need := MinQuantileSamples(q)
	if len(a) < need || len(b) < need {
		return 0, 0, 0, 0, false
	}
	ea, sa, okA := HarrellDavis(a, q)
	eb, sb, okB := HarrellDavis(b, q)
	if !okA || !okB {
		return 0, 0, 0, 0, false
	}
	se := math.Hypot(sa, sb)
	change = eb - ea
	if se == 0 {
		if change == 0 {
			return 0, 0, 0, 1, true
		}
		return 0, 0, 0, 0, false
	}
	const z95 = 1.959963984540054
	p = math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(change)/se))
	return change, change - z95*se, change + z95*se, p, true
}

// MinRankSamples is the fewest samples per side the Mann-Whitney test is
// run on: with 5 and 5 its smallest two-sided p is about 0.008, with fewer
// it can hardly reach alpha and says nothing either way.
const MinRankSamples = 5

// MinQuantileSamples is the fewest samples per side for testing the
// q-quantile: at least two samples above it (n(1-q) >= 2) and never fewer
// than 10, so P95 needs 40 and P99 200. Below that the tail is one or two
// calls and any estimate of its spread is a guess.
func MinQuantileSamples(q float64) int {
	return max(10, int(math.Ceil(2/(1-q)-1e-9)))
}

// CliffsDelta is the effect size of b against a: the probability that a
// value of b exceeds one of a minus the reverse (ties count half each way),
// from -1 (every b below every a) to +1. It is the rank-biserial
// correlation of the Mann-Whitney U statistic.
func CliffsDelta(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	// a and b are sorted: count pairs with a merge walk.
	var gt, lt float64
	j, k := 0, 0 // a[:j] < x, a[:k] <= x
	for _, x := range b {
		for j < len(a) && a[j] < x {
			j++
		}
		for k < len(a) && a[k] <= x {
			k++
		}
		gt += float64(j)
		lt += float64(len(a) - k)
	}
	return (gt - lt) / (float64(len(a)) * float64(len(b)))
}
