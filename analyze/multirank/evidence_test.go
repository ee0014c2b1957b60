package multirank

import (
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest"
)

func TestSameJob(t *testing.T) {
	const s = int64(1e9)
	file := func(name string, start, lo, hi int64, env map[string]string, nccl bool) *analyze.File {
		f := &analyze.File{Name: name, Info: &ingest.TraceInfo{SessionStartUTCNs: start, SpanStartNs: lo, SpanEndNs: hi, LaunchEnv: env},
			Collectives: &analyze.Collectives{}}
		if nccl {
			f.Collectives.Kernels = map[int64][]analyze.Collective{1: {{}}}
		}
		return f
	}
	rank := func(r string) map[string]string { return map[string]string{"RANK": r, "WORLD_SIZE": "2"} }
	base := int64(1_764_000_000) * s
	for _, c := range []struct {
		name  string
		files []*analyze.File
		job   bool
		why   string
	}{
		{"one file", []*analyze.File{file("a", base, 0, 10*s, nil, false)}, true, "one recording"},
		{"ranks at once", []*analyze.File{file("a", base, 0, 10*s, rank("0"), false), file("b", base+s, 0, 10*s, rank("1"), false)}, true, "distinct rank"},
		{"collectives at once", []*analyze.File{file("a", base, 0, 10*s, nil, true), file("b", base+s, 0, 10*s, nil, true)}, true, "collectives"},
		{"one after the other", []*analyze.File{file("a", base, 0, 10*s, rank("0"), true), file("b", base+20*s, 0, 10*s, rank("1"), true)}, false, "do not overlap"},
		{"same rank", []*analyze.File{file("a", base, 0, 10*s, rank("0"), true), file("b", base, 0, 10*s, rank("0"), true)}, false, "both name rank 0"},
		{"no evidence", []*analyze.File{file("a", base, 0, 10*s, nil, false), file("b", base, 0, 10*s, nil, true)}, false, "name no ranks"},
		{"no clock, ranks", []*analyze.File{file("a", 0, 0, 10*s, rank("0"), false), file("b", 0, 0, 10*s, rank("1"), false)}, true, "do not say when"},
		{"no clock, no ranks", []*analyze.File{file("a", 0, 0, 10*s, nil, true), file("b", 0, 0, 10*s, nil, true)}, false, "do not say when"},
	} {
		ev := SameJob(c.files)
		if ev.OneJob != c.job || !strings.Contains(ev.Reason, c.why) {
			t.Errorf("%s: %+v, want job=%v (%q)", c.name, ev, c.job, c.why)
		}
	}
}
