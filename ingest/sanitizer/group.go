package sanitizer

import (
	"fmt"
	"slices"
	"strings"
)

// Key is what the findings of one Group share: two findings with the same
// Key are repeats of one bug.
type Key struct {
	Tool     string
	Severity string
	Kind     string
	Kernel   string // base name
	Location string // Finding.Location
	What     string // KeyFunc's choice: Finding.Detail or Finding.What
}

// A KeyFunc chooses the Key a finding is grouped under.
type KeyFunc func(f *Finding) Key

// ByDetail keys a finding by tool, severity, kind, kernel, location and
// Detail (umtrace analyze --sanitizer, beside a trace).
func ByDetail(f *Finding) Key {
	return Key{f.Tool, f.Severity, f.Kind, f.KernelBase, f.Location(), f.Detail}
}

// ByWhat keys a finding by tool, severity, kind, kernel, location and What
// (umtrace sanitizer, one log).
func ByWhat(f *Finding) Key {
	return Key{f.Tool, f.Severity, f.Kind, f.KernelBase, f.Location(), f.What()}
}

// Group is the findings that share a Key, with what they add up to. Its
// JSON is that of umtrace sanitizer -f json (docs/json.md).
type Group struct {
	Tool       string   `json:"-"`
	Severity   string   `json:"severity"`
	Kind       string   `json:"kind"`
	Kernel     string   `json:"kernel,omitempty"`      // base name
	KernelName string   `json:"kernel_name,omitempty"` // as printed, the first finding's
	Location   string   `json:"location,omitempty"`
	What       string   `json:"what,omitempty"`
	Count      int      `json:"count"`
	Threads    int      `json:"threads,omitempty"` // distinct (block, thread) pairs
	Blocks     int      `json:"blocks,omitempty"`  // distinct blocks
	Hazards    int64    `json:"hazards,omitempty"`
	LeakBytes  int64    `json:"leak_bytes,omitempty"`
	APIs       []string `json:"apis,omitempty"` // in order of first appearance
	FirstLine  int      `json:"first_log_line"` // log line of the first finding
}

// Key is the Key the group's findings share.
func (g *Group) Key() Key {
	return Key{g.Tool, g.Severity, g.Kind, g.Kernel, g.Location, g.What}
}

// GroupFindings groups the findings of logs (in order) by key: the one
// place where umtrace groups findings. Groups come in the order of their
// first finding; callers sort them as their report reads.
func GroupFindings(key KeyFunc, logs ...*Log) []*Group {
	type acc struct {
		threads map[[2]Dim3]bool
		blocks  map[Dim3]bool
	}
	var groups []*Group
	var accs []acc
	index := map[Key]int{}
	for _, l := range logs {
		for i := range l.Findings {
			f := &l.Findings[i]
			k := key(f)
			gi, ok := index[k]
			if !ok {
				gi = len(groups)
				index[k] = gi
				groups = append(groups, &Group{Tool: k.Tool, Severity: k.Severity, Kind: k.Kind, Kernel: k.Kernel,
					KernelName: f.Kernel, Location: k.Location, What: k.What, FirstLine: f.LogLine})
				accs = append(accs, acc{map[[2]Dim3]bool{}, map[Dim3]bool{}})
			}
			g, a := groups[gi], accs[gi]
			g.Count++
			if f.HasThread {
				a.threads[[2]Dim3{f.Block, f.Thread}] = true
				a.blocks[f.Block] = true
			}
			g.Hazards += f.Hazards
			g.LeakBytes += f.LeakBytes
			if f.API != "" && !slices.Contains(g.APIs, f.API) {
				g.APIs = append(g.APIs, f.API)
			}
		}
	}
	for i, g := range groups {
		g.Threads, g.Blocks = len(accs[i].threads), len(accs[i].blocks)
	}
	return groups
}

// What describes a finding without its per-instance values (thread,
// address, API), so that repeats of one bug fall into one group.
func (f *Finding) What() string {
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	switch f.Kind {
	case KindAPIError:
		e := f.APIError
		switch {
		case f.HasResult && e != "":
			e = fmt.Sprintf("%s (error %d)", e, f.APIResult)
		case f.HasResult:
			e = fmt.Sprintf("error %d", f.APIResult)
		}
		add(e)
		if f.Detail != "" {
			add(fmt.Sprintf("%q", f.Detail))
		}
	case KindRace:
		acc := f.Access
		if len(f.RaceWith) > 0 {
			peers := make([]string, len(f.RaceWith))
			for i := range f.RaceWith {
				peers[i] = f.RaceWith[i].Access + " at " + f.RaceWith[i].Where()
			}
			acc += " vs " + strings.Join(peers, ", ")
		}
		add(acc)
		add(f.Detail)
	case KindLeak:
	case KindInvalidAccess, KindUninitialized:
		add(strings.TrimSpace(f.Space + " " + f.Access))
		if f.HasSize {
			add(fmt.Sprintf("%d bytes", f.Size))
		}
		add(f.Detail)
	default:
		if f.Detail != "" {
			add(f.Detail)
		} else {
			add(f.Message)
		}
	}
	return strings.Join(parts, ", ")
}
