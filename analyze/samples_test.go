package analyze

import (
	"testing"

	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
)

func TestSyncSamplesMatchResult(t *testing.T) {
	path := testshared.Need(t, "traces", "torch_mlp_managed.sqlite")
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := Analyze(r, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s, err := SyncSamples(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SyncAPIs) == 0 {
		t.Fatal("no sync APIs")
	}
	if len(res.Startup) != 0 {
		t.Fatalf("start-up %+v: this trace's first runtime call is not host-blocking", res.Startup)
	}
	for _, a := range res.SyncAPIs {
		got := s[a.Name]
		if len(got) != a.Count {
			t.Errorf("%s: %d samples, result counts %d", a.Name, len(got), a.Count)
			continue
		}
		var total int64
		for _, d := range got {
			total += d
		}
		if total != a.Total || got[0] != a.Min || got[len(got)-1] != a.Max {
			t.Errorf("%s: total/min/max %d/%d/%d, result %d/%d/%d", a.Name, total, got[0], got[len(got)-1], a.Total, a.Min, a.Max)
		}
	}
}
