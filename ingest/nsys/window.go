package nsys

import "fmt"

// The trace window: rows whose times lie far outside the trace are left
// out at ingest (counted in a warning), so that no duration or sum the
// analysis forms from them overflows: one row from 0 to INT64_MAX gave
// totals of -9.2e18 ns and timeline bins of negative width.
//
// The window is ANALYSIS_DETAILS' [startTime, stopTime] widened by its own
// length, at least a minute, on each side: nsys writes rows before the
// start it records (1.9 s before it in a 33 s capture of the shared
// exports; none past one window length in any of them). Without a usable
// ANALYSIS_DETAILS (older exports) only the absolute bounds hold: times
// below 2^62 ns and spans below 2^50 ns (13 days).
const (
	maxTimeNs      = 1 << 62
	maxSpanNs      = 1 << 50
	minWindowSlack = 60e9 // ns
)

// window bounds row times; nil: the absolute bounds only.
type window struct {
	lo, hi int64
	what   string // the warning's text
}

// window is the reader's trace window (nil when the export has none).
func (r *Reader) window() *window {
	s, e := r.info.SpanStartNs, r.info.SpanEndNs
	if s < 0 || e <= s || e >= maxTimeNs {
		return nil
	}
	slack := max(e-s, minWindowSlack)
	return &window{lo: s - slack, hi: e + slack,
		what: fmt.Sprintf("times outside the trace (ANALYSIS_DETAILS %d..%d ns, widened by %d ns), left out", s, e, slack)}
}

// inWindow reports whether a row's times (end when hasEnd) are within the
// window and the absolute bounds, recording a warning when not.
func (c *checks) inWindow(table string, start, end int64, hasEnd bool) bool {
	if !hasEnd {
		end = start
	}
	switch {
	case end >= maxTimeNs:
		c.bad(table, "end", end, fmt.Sprintf("times past %d ns, left out", int64(maxTimeNs)))
	case end-start > maxSpanNs:
		c.bad(table, "end", end-start, fmt.Sprintf("spans over %d ns, left out; the example is end-start", int64(maxSpanNs)))
	case c.win != nil && (start < c.win.lo || end > c.win.hi):
		col, v := "end", end
		if start < c.win.lo {
			col, v = "start", start
		}
		c.bad(table, col, v, c.win.what)
	default:
		return true
	}
	return false
}
