// Package gate checks analyses against CI thresholds (absolute, and
// relative to a baseline trace); package report renders the outcome
// (markdown, HTML, JSON, JUnit XML).
package gate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/umtrace/umtrace/analyze"
)

// PageBytes is the page size used to count migrated pages.
const PageBytes = 4096

// Off disables a threshold.
const Off = -1

// Thresholds are the gate's limits. A negative limit is off.
type Thresholds struct {
	MaxFaultRate    float64 // UM page faults (GPU + CPU) per second
	MaxMigNsPerPage float64 // demand-migration time per migrated 4 KiB page, ns
	MaxStormShare   float64 // storm time / trace duration, 0..1
	MaxSyncP99Ns    float64 // P99 of host-blocking calls, ns
	MaxRegression   float64 // with a baseline: allowed growth of each metric, fraction (0.1 = 10%)
}

// Defaults are the default thresholds (docs/gate.md).
var Defaults = Thresholds{
	MaxFaultRate:    120,
	MaxMigNsPerPage: 85_000,
	MaxStormShare:   0.05,
	MaxSyncP99Ns:    Off,
	MaxRegression:   0.10,
}

// Keys are the threshold names accepted in config files and as flags
// (--KEY), in report order.
var Keys = []string{"max-fault-rate", "max-migration-latency-per-page", "max-storm-share", "max-sync-p99", "max-regression"}

// Set parses value for key: a number for max-fault-rate; a duration
// (85us, 2ms) for max-migration-latency-per-page and max-sync-p99; a
// fraction (0.05) or percentage (5%) for max-storm-share and
// max-regression. "off" disables any of them.
func (t *Thresholds) Set(key, value string) error {
	v := strings.TrimSpace(value)
	off := strings.EqualFold(v, "off") || strings.EqualFold(v, "none")
	var f float64
	var err error
	switch strings.ReplaceAll(key, "_", "-") {
	case "max-fault-rate":
		if !off {
			f, err = strconv.ParseFloat(v, 64)
		}
		set(&t.MaxFaultRate, f, off)
	case "max-migration-latency-per-page":
		if !off {
			f, err = parseDur(v)
		}
		set(&t.MaxMigNsPerPage, f, off)
	case "max-sync-p99":
		if !off {
			f, err = parseDur(v)
		}
		set(&t.MaxSyncP99Ns, f, off)
	case "max-storm-share":
		if !off {
			f, err = ParseFraction(v)
		}
		set(&t.MaxStormShare, f, off)
	case "max-regression":
		if !off {
			f, err = ParseFraction(v)
		}
		set(&t.MaxRegression, f, off)
	default:
		return fmt.Errorf("unknown threshold %q (want one of %s)", key, strings.Join(Keys, ", "))
	}
	if err == nil && f < 0 {
		err = fmt.Errorf("negative: want a value ≥ 0, or off")
	}
	if err == nil && f > 1 && strings.ReplaceAll(key, "_", "-") == "max-storm-share" {
		err = fmt.Errorf("out of range: want 0..100%% (0..1), or off")
	}
	if err != nil {
		return fmt.Errorf("threshold %s=%q: %v", key, value, err)
	}
	return nil
}

func set(p *float64, f float64, off bool) {
	if off {
		*p = Off
	} else {
		*p = f
	}
}

func parseDur(v string) (float64, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, nil // bare numbers are ns
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 85us or 2ms")
	}
	return float64(d.Nanoseconds()), nil
}

// ParseFraction parses "0.1" or "10%".
func ParseFraction(v string) (float64, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return 0, fmt.Errorf("want a fraction (0.1) or percentage (10%%)")
		}
		return f / 100, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("want a fraction (0.1) or percentage (10%%)")
	}
	return f, nil
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

// Metrics are the gated quantities of one trace.
type Metrics struct {
	FaultRate    float64 // faults/s
	MigNsPerPage float64 // ns per 4 KiB page of demand migration
	StormShare   float64
	SyncP99Ns    float64
	DemandPages  float64
}

// MetricsOf extracts the gated metrics from an analysis. Demand
// migrations are those caused by page faults, speculative prefetch and
// eviction; their total time divided by the pages they moved (bytes /
// 4096) is the per-page latency.
func MetricsOf(res *analyze.Result) Metrics {
	m := Metrics{FaultRate: res.Headline.FaultsPerSec, StormShare: res.Headline.StormShare, SyncP99Ns: res.Headline.SyncP99Ns}
	var ns, bytes int64
	for _, mg := range res.UnifiedMemory.Migrations {
		switch mg.Cause {
		case analyze.CauseNames[analyze.CauseCoherence], analyze.CauseNames[analyze.CauseSpeculative], analyze.CauseNames[analyze.CauseEviction]:
			ns += mg.TimeNs
			bytes += mg.Bytes
		}
	}
	m.DemandPages = float64(bytes) / PageBytes
	if m.DemandPages > 0 {
		m.MigNsPerPage = float64(ns) / m.DemandPages
	}
	return m
}

// Check is one threshold applied to one trace.
type Check struct {
	Trace  string
	Name   string
	Value  string
	Limit  string
	Pass   bool
	Detail string
}

type metric struct {
	name  string
	get   func(Metrics) float64
	limit func(Thresholds) float64
	fmt   func(float64) string
}

var metrics = []metric{
	{"UM page-fault rate", func(m Metrics) float64 { return m.FaultRate }, func(t Thresholds) float64 { return t.MaxFaultRate },
		func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " faults/s" }},
	{"fault-driven migration latency per page", func(m Metrics) float64 { return m.MigNsPerPage }, func(t Thresholds) float64 { return t.MaxMigNsPerPage },
		func(v float64) string { return analyze.FormatNs(v) }},
	{"storm time share", func(m Metrics) float64 { return m.StormShare }, func(t Thresholds) float64 { return t.MaxStormShare },
		func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }},
	{"sync P99", func(m Metrics) float64 { return m.SyncP99Ns }, func(t Thresholds) float64 { return t.MaxSyncP99Ns },
		func(v float64) string { return analyze.FormatNs(v) }},
}

// Evaluate applies t to one trace's metrics and, when base is not nil,
// checks each metric against the baseline's value grown by
// MaxRegression.
func Evaluate(trace string, m Metrics, t Thresholds, base *Metrics) []Check {
	var out []Check
	for _, mt := range metrics {
		lim := mt.limit(t)
		if lim < 0 {
			continue
		}
		v := mt.get(m)
		c := Check{Trace: trace, Name: "max " + mt.name, Value: mt.fmt(v), Limit: mt.fmt(lim), Pass: v <= lim}
		if !c.Pass {
			c.Detail = fmt.Sprintf("%s is %s, above the limit %s", mt.name, c.Value, c.Limit)
		}
		out = append(out, c)
	}
	if base != nil && t.MaxRegression >= 0 {
		for _, mt := range metrics {
			if mt.limit(t) < 0 {
				continue // off disables the metric, baseline check included
			}
			b, v := mt.get(*base), mt.get(m)
			lim := b * (1 + t.MaxRegression)
			c := Check{Trace: trace, Name: mt.name + " vs baseline", Value: mt.fmt(v),
				Limit: fmt.Sprintf("%s (baseline %s +%.0f%%)", mt.fmt(lim), mt.fmt(b), 100*t.MaxRegression), Pass: v <= lim}
			if !c.Pass {
				c.Detail = fmt.Sprintf("%s regressed from %s to %s, more than %.0f%%", mt.name, mt.fmt(b), mt.fmt(v), 100*t.MaxRegression)
				if b > 0 {
					c.Detail += fmt.Sprintf(" (+%.0f%%)", 100*(v/b-1))
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// Outcome is the gate's verdict over every trace.
type Outcome struct {
	Checks []Check
	Errors []Check // traces that could not be analyzed: Name "analyze", Detail the reason
}

// Failed counts failed checks.
func (o *Outcome) Failed() int {
	n := 0
	for _, c := range o.Checks {
		if !c.Pass {
			n++
		}
	}
	return n
}
