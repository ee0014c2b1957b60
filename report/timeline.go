package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

var sparks = []rune("▁▂▃▄▅▆▇█")

// spark draws vals as one character each: · for zero, ▁…█ scaled to the
// largest value.
func spark(vals []float64) (string, float64) {
	var mx float64
	for _, v := range vals {
		mx = max(mx, v)
	}
	var b strings.Builder
	for _, v := range vals {
		if v <= 0 || mx <= 0 {
			b.WriteRune('·')
			continue
		}
		b.WriteRune(sparks[min(int(float64(len(sparks))*v/mx), len(sparks)-1)])
	}
	return b.String(), mx
}

// sparkTimeline draws the trace's time axis as sparklines, one character
// per bin, with each row's largest bin value at its end.
func sparkTimeline(r *analyze.Result) string {
	tl := r.Timeline
	if len(tl.Bins) == 0 {
		return ""
	}
	b := &bytes.Buffer{}
	indent := ""
	n := len(tl.Bins)
	rows := []struct {
		name string
		val  func(analyze.TimelineBin) float64
		unit func(float64) string
	}{
		{"host blocked", func(x analyze.TimelineBin) float64 { return float64(x.BlockedNs) }, func(v float64) string { return analyze.FormatNs(v) }},
		{"UM stalls", func(x analyze.TimelineBin) float64 { return float64(x.Stalls) }, func(v float64) string { return fmt.Sprint(int64(v)) }},
		{"GPU faults", func(x analyze.TimelineBin) float64 { return float64(x.GPUFaults) }, func(v float64) string { return fmt.Sprint(int64(v)) }},
		{"CPU faults", func(x analyze.TimelineBin) float64 { return float64(x.CPUFaults) }, func(v float64) string { return fmt.Sprint(int64(v)) }},
		{"fault migr.", func(x analyze.TimelineBin) float64 { return float64(x.DemandBytes) }, func(v float64) string { return analyze.FormatBytes(int64(v)) }},
	}
	fmt.Fprintf(b, "%stime axis: %d bins of %s from the trace start; each row scaled to its largest bin [shown at right]\n", indent, n, analyze.FormatNs(float64(tl.BinNs)))
	vals := make([]float64, n)
	for _, row := range rows {
		for i, x := range tl.Bins {
			vals[i] = row.val(x)
		}
		s, mx := spark(vals)
		fmt.Fprintf(b, "%s%-13s %s [%s]\n", indent, row.name, s, row.unit(mx))
	}
	var storm strings.Builder
	for _, x := range tl.Bins {
		if x.Storm {
			storm.WriteRune('█')
		} else {
			storm.WriteRune('·')
		}
	}
	fmt.Fprintf(b, "%s%-13s %s\n", indent, "storm", storm.String())
	end := fmt.Sprintf("%.3f s", float64(tl.BinNs)*float64(n)/1e9)
	fmt.Fprintf(b, "%s%-13s 0 s%s%s\n", indent, "", strings.Repeat(" ", max(n-3-len(end), 1)), end)
	return b.String()
}

// laneSparks draws each lane's host-blocked time and storm bins as
// sparklines (a job's time axis as text): each lane's own bins, scaled to
// its largest bin.
func laneSparks(lanes []Lane) string {
	b := &bytes.Buffer{}
	w := 13
	for _, l := range lanes {
		w = max(w, len([]rune(l.Name))+8)
	}
	fmt.Fprintf(b, "time axis per rank: each rank's own bins over its recording, host-blocked time scaled to its largest bin [shown at right]; █ marks storm bins\n")
	for _, l := range lanes {
		vals := make([]float64, len(l.Bins))
		var storm strings.Builder
		for i, x := range l.Bins {
			vals[i] = float64(x.BlockedNs)
			if x.Storm {
				storm.WriteRune('█')
			} else {
				storm.WriteRune('·')
			}
		}
		s, mx := spark(vals)
		fmt.Fprintf(b, "%-*s %s [%s]\n", w, l.Name+" blocked", s, analyze.FormatNs(mx))
		fmt.Fprintf(b, "%-*s %s\n", w, l.Name+" storm", storm.String())
	}
	return b.String()
}
