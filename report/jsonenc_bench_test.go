package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/umtrace/umtrace/analyze"
)

// BenchmarkEncodeJSON: a report's per-step rows, the bulk of a large
// trace's JSON (12M-row address-diverse: 114 MB), on GOMAXPROCS workers.
func BenchmarkEncodeJSON(b *testing.B) {
	r := sample()
	r.Steps.Rows = make([]analyze.Step, 100_000)
	for i := range r.Steps.Rows {
		r.Steps.Rows[i] = analyze.Step{Index: i, Name: fmt.Sprintf("step %d", i), StartNs: int64(i) * 1_234_567, DurationNs: 1_234_567,
			BlockedNs: int64(i % 1000 * 997), BlockedShare: float64(i%1000) / 1000, GPUFaults: int64(i % 17), MigratedBytes: int64(i) << 12, Episode: i % 3}
	}
	var n countWriter
	if err := EncodeJSON(&n, r); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if err := EncodeJSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
