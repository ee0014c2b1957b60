package gate

import (
	"strings"
	"testing"
)

func TestConfigFormats(t *testing.T) {
	kv := "# CI limits\nmax-fault-rate = 50\nmax_storm_share=2%\nmax-migration-latency-per-page=40us\nmax-sync-p99 = 20ms\nbaseline = base.sqlite\nmax-regression=off\n"
	th := Defaults
	b, err := ParseConfig([]byte(kv), &th)
	if err != nil {
		t.Fatal(err)
	}
	want := Thresholds{MaxFaultRate: 50, MaxMigNsPerPage: 40000, MaxStormShare: 0.02, MaxSyncP99Ns: 20e6, MaxRegression: Off}
	if th != want || b != "base.sqlite" {
		t.Errorf("key=value: %+v %q", th, b)
	}
	th = Defaults
	b, err = ParseConfig([]byte(`{"max-fault-rate": 10, "max-storm-share": 0.1, "max-sync-p99": "off", "baseline": "x.sqlite"}`), &th)
	if err != nil || th.MaxFaultRate != 10 || th.MaxStormShare != 0.1 || th.MaxSyncP99Ns != Off || b != "x.sqlite" || th.MaxMigNsPerPage != 85000 {
		t.Errorf("json: %+v %q %v", th, b, err)
	}
	for _, bad := range []string{"nokey", "max-fault-rate=abc", "unknown=1", "max-storm-share=-1", `{"max-fault-rate": true}`, "{bad json"} {
		th := Defaults
		if _, err := ParseConfig([]byte(bad), &th); err == nil {
			t.Errorf("ParseConfig(%q): want error", bad)
		}
	}
}

func TestEvaluateAndJUnit(t *testing.T) {
	m := Metrics{FaultRate: 200, MigNsPerPage: 1000, StormShare: 0.01, SyncP99Ns: 5e6}
	base := Metrics{FaultRate: 100, MigNsPerPage: 1000, StormShare: 0.01, SyncP99Ns: 5e6}
	th := Defaults
	th.MaxSyncP99Ns = 1e6
	cs := Evaluate("a", m, th, &base)
	var failedNames []string
	for _, c := range cs {
		if !c.Pass {
			failedNames = append(failedNames, c.Name)
		}
	}
	if got := strings.Join(failedNames, ","); got != "max UM page-fault rate,max sync P99,UM page-fault rate vs baseline" {
		t.Errorf("failed: %s", got)
	}
}
