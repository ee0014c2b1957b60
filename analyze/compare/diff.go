// Package diff compares two analyses (before and after a change): step
// time, per-API sync latency percentiles, blocked share, faults,
// migrated bytes and storm time, with a significance test on per-step and
// per-call samples.
package compare

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/umtrace/umtrace/analyze"
)

// Alpha is the significance level of the tests.
const Alpha = 0.05

// MinRelChange is the relative change a single-valued total (storm time,
// faults, bytes) must exceed to count as improved or regressed: totals
// have no samples to test.
const MinRelChange = 0.10

// Method describes the significance test, printed in every report.
const Method = "alpha 0.05, on per-step durations and per-step blocked shares (when both traces have steps: NVTX ranges, or iterations inferred from a clear period) and on per-call durations of host-blocking APIs. " +
	"P50 rows: two-sided Mann-Whitney U test (normal approximation with tie and continuity correction), effect size Cliff's delta, at least 5 samples a side. " +
	"P95/P99 rows: Harrell-Davis quantile estimates with Maritz-Jarrett standard errors, two-sided z test and 95% interval of the change, " +
	"at least 40 samples a side for P95 and 200 for P99 (two samples above the percentile); fewer samples are \"too few to test\". " +
	"Single-valued totals (storm time, faults, migrated bytes) have no samples and count as changed when they move by more than 10%"

// Side is one trace of the comparison.
type Side struct {
	Result *analyze.Result
	Sync   map[string][]int64 // analyze.File.Sync
}

// Row is one compared metric. Lower is better for every metric.
type Row struct {
	Metric      string   `json:"metric"`
	Unit        string   `json:"unit"` // ns, share, count, bytes, per_sec
	Before      *float64 `json:"before"`
	After       *float64 `json:"after"`
	Change      *float64 `json:"change"`     // after - before
	RelChange   *float64 `json:"rel_change"` // change / before; null when before is 0 or missing
	Test        string   `json:"test"`       // "mann_whitney_u" (P50 rows), "harrell_davis" (P95/P99 rows) or "none"
	NBefore     int      `json:"n_before,omitempty"`
	NAfter      int      `json:"n_after,omitempty"`
	MinN        int      `json:"min_n,omitempty"` // the fewest samples a side the row's test needs
	P           *float64 `json:"p_value"`
	EffectSize  *float64 `json:"effect_size"` // Cliff's delta of after against before (mann_whitney_u rows), -1..1
	CILow       *float64 `json:"ci_low"`      // 95% interval of after - before (harrell_davis rows)
	CIHigh      *float64 `json:"ci_high"`
	Significant bool     `json:"significant"`
	Verdict     string   `json:"verdict"` // improved, regressed, unchanged, untested (fewer samples than min_n), n/a (a side has none)
}

// Diff is the comparison of two traces.
type Diff struct {
	Before  string `json:"before"`
	After   string `json:"after"`
	Method  string `json:"method"`
	Overall string `json:"overall"` // improvement, regression, mixed, no significant change
	Reason  string `json:"overall_reason"`
	Rows    []Row  `json:"rows"`
}

// MannWhitney returns the two-sided p-value of the Mann-Whitney U test of
// a against b, using the normal approximation with tie correction and a
// continuity correction. ok is false when the test is undefined (a side
// with fewer than 2 values, or every value tied).
func MannWhitney(a, b []float64) (p float64, ok bool) {
	n1, n2 := len(a), len(b)
	if n1 < 2 || n2 < 2 {
		return 0, false
	}
	type v struct {
		x float64
		g int
	}
	all := make([]v, 0, n1+n2)
	for _, x := range a {
		all = append(all, v{x, 0})
	}
	for _, x := range b {
		all = append(all, v{x, 1})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].x < all[j].x })
	n := float64(n1 + n2)
	var r1, tie float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of 1-based ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].g == 0 {
				r1 += rank
			}
		}
		t := float64(j - i)
		tie += t*t*t - t
		i = j
	}
	u := r1 - float64(n1)*float64(n1+1)/2
	mu := float64(n1) * float64(n2) / 2
	sigma2 := float64(n1) * float64(n2) / 12 * ((n + 1) - tie/(n*(n-1)))
	if sigma2 <= 0 {
		return 0, false
	}
	d := math.Abs(u-mu) - 0.5
	if d < 0 {
		d = 0
	}
	z := d / math.Sqrt(sigma2)
	p = 2 * (1 - distuv.UnitNormal.CDF(z))
	return math.Min(1, p), true
}

func f64(x float64) *float64 { return &x }

// quantile is type-7 (analyze.Dist's definition) of sorted s.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	pos := float64(len(s)-1) * q
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func toF(s []int64) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = float64(x)
	}
	sort.Float64s(out)
	return out
}

// scalar builds a row for a single-valued total.
func scalar(metric, unit string, before, after float64) Row {
	r := Row{Metric: metric, Unit: unit, Before: f64(before), After: f64(after), Change: f64(after - before), Test: "none"}
	if before != 0 {
		r.RelChange = f64(round((after - before) / before))
	}
	switch {
	case before == after:
		r.Verdict = "unchanged"
	case before == 0:
		r.Verdict = "regressed"
	case (after-before)/before <= -MinRelChange:
		r.Verdict = "improved"
	case (after-before)/before >= MinRelChange:
		r.Verdict = "regressed"
	default:
		r.Verdict = "unchanged"
	}
	return r
}

// sampled builds a row for the q-quantile of two sorted samples: the
// values are type-7 percentiles (analyze.Dist's definition); the median is
// tested with Mann-Whitney U, a tail percentile with Harrell-Davis
// estimates. A side with fewer samples than the test needs is "untested".
func sampled(metric, unit string, a, b []float64, q float64) Row {
	r := Row{Metric: metric, Unit: unit, NBefore: len(a), NAfter: len(b), Verdict: "n/a"}
	if len(a) > 0 {
		r.Before = f64(round(quantile(a, q)))
	}
	if len(b) > 0 {
		r.After = f64(round(quantile(b, q)))
	}
	if r.Before == nil || r.After == nil {
		r.Test = "none"
		return r
	}
	r.Change = f64(round(*r.After - *r.Before))
	if *r.Before != 0 {
		r.RelChange = f64(round(*r.Change / *r.Before))
	}
	untested := func() Row {
		r.Test = "none"
		r.Verdict = "unchanged"
		if *r.After != *r.Before {
			r.Verdict = "untested"
		}
		return r
	}
	var p, own float64
	if q == 0.5 {
		r.Test, r.MinN = "mann_whitney_u", MinRankSamples
		if len(a) < MinRankSamples || len(b) < MinRankSamples {
			return untested()
		}
		var ok bool
		if p, ok = MannWhitney(a, b); !ok {
			return untested()
		}
		r.EffectSize = f64(round(CliffsDelta(a, b)))
		own = *r.Change
		if own == 0 { // the medians tie: the test's direction is the shift of the whole sample
			own = *r.EffectSize
		}
	} else {
		r.Test, r.MinN = "harrell_davis", MinQuantileSamples(q)
		change, lo, hi, pq, ok := QuantileTest(a, b, q)
		if !ok {
			return untested()
		}
		p, own = pq, change
		r.CILow, r.CIHigh = f64(round(lo)), f64(round(hi))
	}
	r.P = f64(roundP(p))
	r.Significant = p < Alpha
	r.Verdict = "unchanged"
	if r.Significant {
		switch {
		case own < 0:
			r.Verdict = "improved"
		case own > 0:
			r.Verdict = "regressed"
		}
	}
	return r
}

// round keeps 4 decimals (stable JSON).
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// roundP keeps 4 significant digits; a p-value too small for a float64
// is kept as the smallest positive one, never 0.
func roundP(p float64) float64 {
	if p <= 0 {
		return math.SmallestNonzeroFloat64
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(p, 'g', 4, 64), 64)
	return v
}

// Compare compares before and after.
func Compare(before, after Side) *Diff {
	b, a := before.Result, after.Result
	d := &Diff{Before: b.Trace.File, After: a.Trace.File, Method: Method}
	const p50, p95, p99 = 0.5, 0.95, 0.99

	stepDur := func(r *analyze.Result) (dur, blocked []float64) {
		for _, s := range r.Steps.Rows {
			if s.Warmup { // like start-up, the warm-up step says nothing of the steady state
				continue
			}
			dur = append(dur, float64(s.DurationNs))
			blocked = append(blocked, s.BlockedShare)
		}
		sort.Float64s(dur)
		sort.Float64s(blocked)
		return
	}
	if b.Steps.Count > 0 && a.Steps.Count > 0 {
		bd, bb := stepDur(b)
		ad, ab := stepDur(a)
		d.Rows = append(d.Rows,
			sampled("step time P50", "ns", bd, ad, p50),
			sampled("step time P99", "ns", bd, ad, p99),
			sampled("step blocked share P50", "share", bb, ab, p50))
	}
	d.Rows = append(d.Rows,
		scalar("blocked share", "share", b.Headline.BlockedShare, a.Headline.BlockedShare),
		scalar("storm time", "ns", float64(b.Headline.StormTimeNs), float64(a.Headline.StormTimeNs)),
		scalar("storm share", "share", b.Headline.StormShare, a.Headline.StormShare),
		scalar("GPU page faults", "count", float64(b.Headline.GPUFaults), float64(a.Headline.GPUFaults)),
		scalar("CPU page faults", "count", float64(b.Headline.CPUFaults), float64(a.Headline.CPUFaults)),
		scalar("page faults per second", "per_sec", b.Headline.FaultsPerSec, a.Headline.FaultsPerSec),
		scalar("migrated bytes", "bytes", float64(b.Headline.MigratedBytes), float64(a.Headline.MigratedBytes)),
		scalar("fault-driven migrated bytes", "bytes", float64(b.Headline.DemandMigBytes), float64(a.Headline.DemandMigBytes)),
	)
	pool := func(m map[string][]int64) []float64 {
		var all []int64
		for _, s := range m {
			all = append(all, s...)
		}
		return toF(all)
	}
	ba, aa := pool(before.Sync), pool(after.Sync)
	d.Rows = append(d.Rows, sampled("sync P50 (all host-blocking calls)", "ns", ba, aa, p50),
		sampled("sync P99 (all host-blocking calls)", "ns", ba, aa, p99))
	names := map[string]bool{}
	for n := range before.Sync {
		names[n] = true
	}
	for n := range after.Sync {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		bs, as := toF(before.Sync[n]), toF(after.Sync[n])
		d.Rows = append(d.Rows, sampled(n+" P50", "ns", bs, as, p50), sampled(n+" P95", "ns", bs, as, p95), sampled(n+" P99", "ns", bs, as, p99))
	}
	d.Overall, d.Reason = overall(d.Rows)
	return d
}

// primary are the metrics that decide the overall verdict.
var primary = map[string]bool{
	"step time P50": true, "storm time": true, "page faults per second": true, "fault-driven migrated bytes": true,
}

func overall(rows []Row) (string, string) {
	var imp, reg []string
	for _, r := range rows {
		if !primary[r.Metric] {
			continue
		}
		switch r.Verdict {
		case "improved":
			imp = append(imp, r.Metric)
		case "regressed":
			reg = append(reg, r.Metric)
		}
	}
	switch {
	case len(imp) > 0 && len(reg) == 0:
		return "improvement", "improved: " + strings.Join(imp, ", ")
	case len(reg) > 0 && len(imp) == 0:
		return "regression", "regressed: " + strings.Join(reg, ", ")
	case len(reg) > 0:
		return "mixed", "improved: " + strings.Join(imp, ", ") + "; regressed: " + strings.Join(reg, ", ")
	}
	return "no significant change", "no change in step time, storm time, fault rate or fault-driven migration"
}
