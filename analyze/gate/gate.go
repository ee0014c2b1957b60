// Package gate checks analyses against CI thresholds (absolute, and
// relative to a baseline trace); package report renders the outcome
// (markdown, HTML, JSON, JUnit XML).
package gate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/umtrace/umtrace/analyze"
)

// Off disables a threshold.
const Off = -1

// Thresholds are the gate's limits. A negative limit is off.
type Thresholds struct {
	MaxFaultRate      float64 // UM page faults (GPU + CPU) per second
	MaxFaultNsPerPage float64 // GPU page-fault latency per faulting page, ns
	MaxStormShare     float64 // storm time / trace duration, 0..1
	MaxSyncP99Ns      float64 // P99 of host-blocking calls, ns
	MaxRegression     float64 // with a baseline: allowed growth of each metric, fraction (0.1 = 10%)
}

// Defaults are the default thresholds, chosen between what the shared
// traces measure (docs/gate.md, "Defaults"): the storm traces have 461
// and 2547 faults/s, 9.1% and 24.8% storm share and 90 and 106 µs of
// GPU fault latency per page; the healthy ones have no faults and no
// storm. No sync-P99 limit separates them (the healthy explicit-copy
// trace's 11.7 ms is above a storm trace's 4.5 ms), so that one is off.
var Defaults = Thresholds{
	MaxFaultRate:      120,
	MaxFaultNsPerPage: 45_000,
	MaxStormShare:     0.05,
	MaxSyncP99Ns:      Off,
	MaxRegression:     0.10,
}

// Keys are the threshold names accepted in config files and as flags
// (--KEY), in report order.
var Keys = []string{"max-fault-rate", "max-fault-latency-per-page", "max-storm-share", "max-sync-p99", "max-regression"}

// OldKeys maps former key names to their current ones.
var OldKeys = map[string]string{"max-migration-latency-per-page": "max-fault-latency-per-page"}

// Set parses value for key: a number for max-fault-rate; a duration
// (45us, 2ms) for max-fault-latency-per-page and max-sync-p99; a
// percentage, with or without % (5 and 5% are 5 %), for max-storm-share
// and max-regression. "off" disables any of them.
func (t *Thresholds) Set(key, value string) error {
	k := strings.ReplaceAll(key, "_", "-")
	if nk, ok := OldKeys[k]; ok {
		k = nk
	}
	number := func(v string) (float64, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("want a number such as 120")
		}
		return f, nil
	}
	fields := map[string]struct {
		p     *float64
		parse func(string) (float64, error)
	}{
		"max-fault-rate":             {&t.MaxFaultRate, number},
		"max-fault-latency-per-page": {&t.MaxFaultNsPerPage, parseDur},
		"max-sync-p99":               {&t.MaxSyncP99Ns, parseDur},
		"max-storm-share":            {&t.MaxStormShare, ParsePercent},
		"max-regression":             {&t.MaxRegression, ParsePercent},
	}
	fd, ok := fields[k]
	if !ok {
		return fmt.Errorf("unknown threshold %q (want one of %s)", key, strings.Join(Keys, ", "))
	}
	v := strings.TrimSpace(value)
	if strings.EqualFold(v, "off") || strings.EqualFold(v, "none") {
		*fd.p = Off
		return nil
	}
	f, err := fd.parse(v)
	switch {
	case err != nil:
	case f < 0:
		err = fmt.Errorf("negative: want a value ≥ 0, or off")
	case f > 1 && k == "max-storm-share":
		err = fmt.Errorf("out of range: want 0..100%%, or off")
	}
	if err != nil {
		return fmt.Errorf("threshold %s=%q: %v", key, value, err)
	}
	*fd.p = f
	return nil
}

func parseDur(v string) (float64, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, nil // bare numbers are ns
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 85us or 2ms")
	}
	return float64(d.Nanoseconds()), nil
}

// ParsePercent parses a share given in percent, with or without the
// sign: "5", "5%" and "5 %" are 5 % and "0.5" is 0.5 %. It returns the
// fraction (0.05).
func ParsePercent(v string) (float64, error) {
	p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "%"))
	f, err := strconv.ParseFloat(p, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a percentage such as 5 or 5%%")
	}
	return f / 100, nil
}

// ParseConfig reads a config file: either a JSON object mapping keys to
// numbers or strings, or lines of key=value with # comments. Besides the
// threshold keys it accepts "baseline" (a trace path), returned
// separately.
func ParseConfig(data []byte, t *Thresholds) (baseline string, err error) {
	kv := map[string]string{}
	var order []string
	trim := strings.TrimSpace(string(data))
	if strings.HasPrefix(trim, "{") {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return "", fmt.Errorf("config JSON: %v", err)
		}
		for k, v := range m {
			switch x := v.(type) {
			case string:
				kv[k] = x
			case float64:
				kv[k] = strconv.FormatFloat(x, 'g', -1, 64)
			default:
				return "", fmt.Errorf("config key %s: want a number or string", k)
			}
			order = append(order, k)
		}
		sort.Strings(order)
	} else {
		for i, line := range strings.Split(string(data), "\n") {
			if j := strings.IndexByte(line, '#'); j >= 0 {
				line = line[:j]
			}
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return "", fmt.Errorf("config line %d: want key=value, got %q", i+1, line)
			}
			k = strings.TrimSpace(k)
			kv[k] = strings.TrimSpace(v)
			order = append(order, k)
		}
	}
	for _, k := range order {
		if strings.ReplaceAll(k, "_", "-") == "baseline" {
			baseline = kv[k]
			continue
		}
		if err := t.Set(k, kv[k]); err != nil {
			return "", err
		}
	}
	return baseline, nil
}

// Status is a check's result.
type Status string

// Check results. Unknown means the trace cannot tell (the data the check
// needs was not recorded); it fails the gate unless unknowns are allowed.
const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Unknown Status = "unknown"
)

// Measure is one gated quantity of one trace. When Known is false, Why
// says what was not recorded and V is only a lower bound (what was
// recorded).
type Measure struct {
	V     float64
	Known bool
	Why   string
}

func known(v float64) Measure { return Measure{V: v, Known: true} }

// Metrics are the gated quantities of one trace.
type Metrics struct {
	FaultRate       Measure // UM page faults (GPU + CPU) per second
	FaultNsPerPage  Measure // GPU page-fault latency per faulting page, ns
	StormShare      Measure
	SyncP99Ns       Measure
	GPUFaults       int64
	DemandMigrBytes int64
}

// MetricsOf extracts the gated metrics from an analysis.
//
// The fault rate is known only when both GPU and CPU fault collection
// were on (analyze.UM.*FaultCollection); with one or both off it is a
// lower bound. The fault latency per page is the summed duration of the
// GPU page-fault groups (first fault to resolution) divided by the pages
// they cover (numberOfPageFaults); it needs GPU fault collection. The
// storm share is unknown when analyze could not assess the trace
// (verdict insufficient_data).
func MetricsOf(res *analyze.Result) Metrics {
	u := &res.UnifiedMemory
	m := Metrics{
		FaultRate:       known(res.Headline.FaultsPerSec),
		StormShare:      known(res.Headline.StormShare),
		SyncP99Ns:       known(res.Headline.SyncP99Ns),
		GPUFaults:       u.GPUFaults,
		DemandMigrBytes: res.Headline.DemandMigBytes,
	}
	var off []string
	for _, k := range []struct{ name, state string }{{"GPU", u.GPUFaultCollection}, {"CPU", u.CPUFaultCollection}} {
		switch k.state {
		case analyze.CollectionOn:
		case analyze.CollectionOff:
			off = append(off, k.name+" page-fault collection was off")
		default:
			off = append(off, "the export does not say whether "+k.name+" page faults were collected")
		}
	}
	if len(off) > 0 {
		m.FaultRate.Known = false
		m.FaultRate.Why = strings.Join(off, "; ") + " (nsys --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true)"
	}
	if u.GPUFaults > 0 {
		m.FaultNsPerPage = known(float64(u.GPUFaultNs) / float64(u.GPUFaults))
	} else {
		m.FaultNsPerPage = known(0)
	}
	if u.GPUFaultCollection != analyze.CollectionOn {
		m.FaultNsPerPage.Known = false
		m.FaultNsPerPage.Why = "GPU page faults were not recorded (nsys --cuda-um-gpu-page-faults=true)"
		if u.GPUFaultCollection == analyze.CollectionUnknown {
			m.FaultNsPerPage.Why = "the export does not say whether GPU page faults were collected"
		}
	}
	if res.Verdict == analyze.VerdictInsufficient {
		m.StormShare.Known = false
		m.StormShare.Why = "analyze could not assess storms: " + res.Reason
	}
	return m
}

// Units of Check.Value and Check.Limit.
const (
	UnitRate  = "faults/s"
	UnitNs    = "ns"
	UnitShare = "share" // 0..1
)

// Check is one threshold applied to one trace.
type Check struct {
	Trace    string
	Name     string  // e.g. "max UM page-fault rate", "UM page-fault rate vs baseline"
	Metric   string  // fault-rate, fault-latency-per-page, storm-share, sync-p99
	Kind     string  // "limit" (absolute) or "baseline"
	Unit     string  // UnitRate, UnitNs or UnitShare
	Value    float64 // the trace's value (a lower bound when Status is Unknown)
	Limit    float64 // the largest passing value
	Baseline float64 // the baseline's value (Kind "baseline")
	Growth   float64 // the allowed growth over the baseline (Kind "baseline")
	Status   Status
	Detail   string // why it failed or is unknown; "" on pass
}

// Passed reports whether the check passed.
func (c Check) Passed() bool { return c.Status == Pass }

// Format formats a value in the check's unit.
func (c Check) Format(v float64) string {
	switch c.Unit {
	case UnitRate:
		return strconv.FormatFloat(v, 'f', 1, 64) + " faults/s"
	case UnitShare:
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	}
	return analyze.FormatNs(v)
}

// ValueText is the value as reports print it.
func (c Check) ValueText() string {
	if c.Status == Unknown {
		if c.Value > 0 {
			return "≥ " + c.Format(c.Value)
		}
		return "unknown"
	}
	return c.Format(c.Value)
}

// LimitText is the limit as reports print it.
func (c Check) LimitText() string {
	if c.Kind == "baseline" {
		return fmt.Sprintf("%s (baseline %s +%s%%)", c.Format(c.Limit), c.Format(c.Baseline), strconv.FormatFloat(100*c.Growth, 'g', -1, 64))
	}
	return c.Format(c.Limit)
}

type metric struct {
	key   string
	name  string
	unit  string
	get   func(Metrics) Measure
	limit func(Thresholds) float64
}

var metrics = []metric{
	{"fault-rate", "UM page-fault rate", UnitRate, func(m Metrics) Measure { return m.FaultRate }, func(t Thresholds) float64 { return t.MaxFaultRate }},
	{"fault-latency-per-page", "GPU page-fault latency per page", UnitNs, func(m Metrics) Measure { return m.FaultNsPerPage }, func(t Thresholds) float64 { return t.MaxFaultNsPerPage }},
	{"storm-share", "storm time share", UnitShare, func(m Metrics) Measure { return m.StormShare }, func(t Thresholds) float64 { return t.MaxStormShare }},
	{"sync-p99", "sync P99", UnitNs, func(m Metrics) Measure { return m.SyncP99Ns }, func(t Thresholds) float64 { return t.MaxSyncP99Ns }},
}

// Evaluate applies t's absolute limits to one trace's metrics and, when
// base is not nil and MaxRegression is on, checks every metric against
// the baseline's value grown by MaxRegression. Baseline checks stand on
// their own: turning an absolute limit off leaves its baseline check.
//
// A value that was not recorded gives Unknown, except that a recorded
// lower bound above the limit is a certain Fail.
func Evaluate(trace string, m Metrics, t Thresholds, base *Metrics) []Check {
	var out []Check
	for _, mt := range metrics {
		lim := mt.limit(t)
		if lim < 0 {
			continue
		}
		v := mt.get(m)
		c := Check{Trace: trace, Name: "max " + mt.name, Metric: mt.key, Kind: "limit", Unit: mt.unit, Value: v.V, Limit: lim}
		switch {
		case v.V > lim:
			c.Status = Fail
			c.Detail = fmt.Sprintf("%s is %s, above the limit %s", mt.name, c.ValueText(), c.Format(lim))
			if !v.Known {
				c.Detail += " (a lower bound: " + v.Why + ")"
			}
		case !v.Known:
			c.Status = Unknown
			c.Detail = mt.name + " unknown: " + v.Why
		default:
			c.Status = Pass
		}
		out = append(out, c)
	}
	if base == nil || t.MaxRegression < 0 {
		return out
	}
	for _, mt := range metrics {
		b, v := mt.get(*base), mt.get(m)
		lim := b.V * (1 + t.MaxRegression)
		c := Check{Trace: trace, Name: mt.name + " vs baseline", Metric: mt.key, Kind: "baseline", Unit: mt.unit,
			Value: v.V, Limit: lim, Baseline: b.V, Growth: t.MaxRegression}
		switch {
		case b.Known && v.V > lim:
			c.Status = Fail
			c.Detail = fmt.Sprintf("%s regressed from %s to %s, more than %s%%", mt.name, c.Format(b.V), c.ValueText(),
				strconv.FormatFloat(100*t.MaxRegression, 'g', -1, 64))
			if b.V > 0 {
				c.Detail += fmt.Sprintf(" (+%.0f%%)", 100*(v.V/b.V-1))
			}
		case !b.Known:
			c.Status = Unknown
			c.Detail = mt.name + " of the baseline unknown: " + b.Why
		case !v.Known:
			c.Status = Unknown
			c.Detail = mt.name + " unknown: " + v.Why
		default:
			c.Status = Pass
		}
		out = append(out, c)
	}
	return out
}

// Outcome is the gate's verdict over every trace.
type Outcome struct {
	Checks       []Check
	Errors       []Check // traces that could not be analyzed: Name "analyze", Detail the reason
	AllowUnknown bool    // unknown checks do not fail the gate
}

// Failed counts failed checks.
func (o *Outcome) Failed() int { return o.count(Fail) }

// Unknown counts checks the traces could not decide.
func (o *Outcome) Unknown() int { return o.count(Unknown) }

// Blocking counts the checks that fail the gate: failed ones, and
// unknown ones unless AllowUnknown.
func (o *Outcome) Blocking() int {
	if o.AllowUnknown {
		return o.Failed()
	}
	return o.Failed() + o.Unknown()
}

func (o *Outcome) count(s Status) int {
	n := 0
	for _, c := range o.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}
