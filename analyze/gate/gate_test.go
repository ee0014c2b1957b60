package gate

import (
	"math"
	"strings"
	"testing"
)

func TestConfigFormats(t *testing.T) {
	kv := "# CI limits\nmax-fault-rate = 50\nmax_storm_share=2%\nmax-fault-latency-per-page=40us\nmax-sync-p99 = 20ms\nbaseline = base.sqlite\nmax-regression=off\n"
	th := Defaults
	b, err := ParseConfig([]byte(kv), &th)
	if err != nil {
		t.Fatal(err)
	}
	want := Thresholds{MaxFaultRate: 50, MaxFaultNsPerPage: 40000, MaxStormShare: 0.02, MaxSyncP99Ns: 20e6, MaxRegression: Off}
	if th != want || b != "base.sqlite" {
		t.Errorf("key=value: %+v %q", th, b)
	}
	th = Defaults
	b, err = ParseConfig([]byte(`{"max-fault-rate": 10, "max-storm-share": 0.1, "max-sync-p99": "off", "baseline": "x.sqlite"}`), &th)
	if err != nil || th.MaxFaultRate != 10 || th.MaxStormShare != 0.001 || th.MaxSyncP99Ns != Off || b != "x.sqlite" || th.MaxFaultNsPerPage != Defaults.MaxFaultNsPerPage {
		t.Errorf("json: %+v %q %v", th, b, err)
	}
	// The former key name still sets the latency limit.
	th = Defaults
	if _, err := ParseConfig([]byte("max-migration-latency-per-page = 70us"), &th); err != nil || th.MaxFaultNsPerPage != 70000 {
		t.Errorf("old key: %+v %v", th, err)
	}
	for _, bad := range []string{"nokey", "max-fault-rate=abc", "max-fault-rate=NaN", "max-storm-share=101", "max-storm-share=abc%", "unknown=1", "max-storm-share=-1", `{"max-fault-rate": true}`, "{bad json"} {
		th := Defaults
		if _, err := ParseConfig([]byte(bad), &th); err == nil {
			t.Errorf("ParseConfig(%q): want error", bad)
		}
	}
}

func statuses(cs []Check) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Name+"="+string(c.Status))
	}
	return strings.Join(s, ",")
}

func TestEvaluateStatuses(t *testing.T) {
	m := Metrics{FaultRate: known(200), FaultNsPerPage: known(1000), StormShare: known(0.01), SyncP99Ns: known(5e6)}
	base := Metrics{FaultRate: known(100), FaultNsPerPage: known(1000), StormShare: known(0.01), SyncP99Ns: known(5e6)}
	th := Defaults
	th.MaxSyncP99Ns = 1e6
	got := statuses(Evaluate("a", m, th, &base))
	want := "max UM page-fault rate=fail,max GPU page-fault latency per page=pass,max storm time share=pass,max sync P99=fail," +
		"UM page-fault rate vs baseline=fail,GPU page-fault latency per page vs baseline=pass,storm time share vs baseline=pass,sync P99 vs baseline=pass"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// Absolute limits off: the baseline checks remain.
	off := Thresholds{MaxFaultRate: Off, MaxFaultNsPerPage: Off, MaxStormShare: Off, MaxSyncP99Ns: Off, MaxRegression: 0.1}
	cs := Evaluate("a", m, off, &base)
	if len(cs) != 4 || cs[0].Kind != "baseline" || cs[0].Status != Fail || math.Abs(cs[0].Limit-110) > 1e-9 {
		t.Errorf("baseline only: %+v", cs)
	}

	// Not recorded: unknown, unless the recorded part already exceeds the limit.
	u := m
	u.FaultRate = Measure{V: 0, Why: "off"}
	u.FaultNsPerPage = Measure{V: 0, Why: "off"}
	if got := statuses(Evaluate("a", u, Defaults, nil)); got != "max UM page-fault rate=unknown,max GPU page-fault latency per page=unknown,max storm time share=pass" {
		t.Errorf("unknown: %s", got)
	}
	u.FaultRate.V = 500
	if got := statuses(Evaluate("a", u, Defaults, nil)); !strings.HasPrefix(got, "max UM page-fault rate=fail,") {
		t.Errorf("lower bound above the limit: %s", got)
	}
	// An unknown baseline makes the baseline check unknown.
	if got := statuses(Evaluate("a", m, off, &u)); got != "UM page-fault rate vs baseline=unknown,GPU page-fault latency per page vs baseline=unknown,storm time share vs baseline=pass,sync P99 vs baseline=pass" {
		t.Errorf("unknown baseline: %s", got)
	}
	o := Outcome{Checks: Evaluate("a", u, Defaults, nil)}
	if o.Failed() != 1 || o.Unknown() != 1 || o.Blocking() != 2 {
		t.Errorf("outcome counts %d %d %d", o.Failed(), o.Unknown(), o.Blocking())
	}
	o.AllowUnknown = true
	if o.Blocking() != 1 {
		t.Errorf("allowed unknown still blocks: %d", o.Blocking())
	}
}

// TestPercentValues: shares and the regression are percentages with or
// without the sign (50 and 50% are 50 %, 0.5 is 0.5 %); bad values give
// a message without Go's parser text.
func TestPercentValues(t *testing.T) {
	for v, want := range map[string]float64{"50": 0.5, "50%": 0.5, " 50 % ": 0.5, "0.5": 0.005, "100": 1, "0": 0, "5%": 0.05} {
		th := Defaults
		if err := th.Set("max-storm-share", v); err != nil || math.Abs(th.MaxStormShare-want) > 1e-15 {
			t.Errorf("max-storm-share %q: %v %v, want %v", v, th.MaxStormShare, err, want)
		}
		if err := th.Set("max-regression", v); err != nil || math.Abs(th.MaxRegression-want) > 1e-15 {
			t.Errorf("max-regression %q: %v %v, want %v", v, th.MaxRegression, err, want)
		}
	}
	for k, v := range map[string]string{"max-storm-share": "abc", "max-regression": "x%", "max-fault-rate": "abc", "max-sync-p99": "abc"} {
		th := Defaults
		err := th.Set(k, v)
		if err == nil || strings.Contains(err.Error(), "strconv") || strings.Contains(err.Error(), "invalid syntax") {
			t.Errorf("%s %q: %v", k, v, err)
		}
	}
}
