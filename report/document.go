package report

import (
	"cmp"
	"slices"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
)

// The analyze JSON document (docs/json.md, docs/schema/analyze.schema.json):
// one shape whatever analyze was given. Every document has the same
// top-level core — schema_version, kind, verdict, verdict_reason, files,
// story, episodes (each with file, pid, rank and device), mitigations
// (each with the files and ranks it applies to) and warnings. Beside the
// core:
//
//   - kind "trace" (one trace of one process): the trace's own analysis,
//     every analyze.Result field at the top level;
//   - kind "job" (a file of several processes, or traces of one job): the
//     job fields (ranks, clock, collective_source, job_steps, stragglers,
//     attributions, attribution_thresholds), results[] (each rank's
//     analysis, a trace document) and traces[] (whole-file analyses of
//     files that hold several ranks);
//   - kind "separate" (traces that are not one job): note and results[]
//     (each trace's analysis, a trace document).
//
// A consumer that wants each analysis reads (.results // [.])[].

// Document kinds.
const (
	KindTrace    = "trace"
	KindJob      = "job"
	KindSeparate = "separate"
)

// DocEpisode is a storm episode with where it happened: the file and rank
// (−1 when unknown) beside the episode's own pid and device.
type DocEpisode struct {
	File string `json:"file"`
	Rank int    `json:"rank"`
	analyze.Episode
}

// DocMitigation is a mitigation with the files and ranks (known ones) of
// the analyses that advised it. Its evidence is the first such analysis's
// (the one with the most storm time).
type DocMitigation struct {
	analyze.Mitigation
	Files []string `json:"files"`
	Ranks []int    `json:"ranks"`
}

// Story is the first screen of a report as data: where the storms struck
// and what they cost in steady-state step time, and the change to make
// first.
type Story struct {
	Files   []string `json:"files"`   // files with a storm episode
	Ranks   []int    `json:"ranks"`   // known ranks with a storm episode
	Pids    []int64  `json:"pids"`    // processes with a storm episode
	Devices []int64  `json:"devices"` // their GPUs (known ones)
	// SteadySteps counts the steps after the warm-up (over every
	// analysis); StormSteps those of them in a storm episode.
	SteadySteps int `json:"steady_steps"`
	StormSteps  int `json:"storm_steps"`
	// StormStepP50Ns and CalmStepP50Ns are the lower medians of the
	// steady-state step times in and out of storm episodes; 0 without
	// such steps.
	StormStepP50Ns int64 `json:"storm_step_p50_ns"`
	CalmStepP50Ns  int64 `json:"calm_step_p50_ns"`
	// FirstChange is the id of the mitigation to try first ("" when
	// there is none): the first of mitigations.
	FirstChange string `json:"first_change"`
}

// TraceDocument is the analyze document of one trace (kind "trace"): the
// core fields declared here replace the analyze.Result fields of the same
// names (the encoder follows encoding/json: the shallower field wins).
type TraceDocument struct {
	SchemaVersion int             `json:"schema_version"`
	Kind          string          `json:"kind"`
	Files         []string        `json:"files"`
	Story         Story           `json:"story"`
	Episodes      []DocEpisode    `json:"episodes"`
	Mitigations   []DocMitigation `json:"mitigations"`
	analyze.Result
}

// JobDocument is the analyze document of a job (kind "job").
type JobDocument struct {
	SchemaVersion int             `json:"schema_version"`
	Kind          string          `json:"kind"`
	Verdict       string          `json:"verdict"`
	Reason        string          `json:"verdict_reason"`
	Files         []string        `json:"files"`
	Story         Story           `json:"story"`
	Episodes      []DocEpisode    `json:"episodes"`
	Mitigations   []DocMitigation `json:"mitigations"`
	Warnings      []string        `json:"warnings"`

	Ranks                 []multirank.Rank         `json:"ranks"`
	Clock                 multirank.ClockAlignment `json:"clock"`
	Collective            string                   `json:"collective_source"`
	JobSteps              []multirank.Step         `json:"job_steps"`
	Stragglers            []multirank.Straggler    `json:"stragglers"`
	Attributions          []multirank.Attribution  `json:"attributions"`
	AttributionThresholds multirank.Thresholds     `json:"attribution_thresholds"`
	Results               []*TraceDocument         `json:"results"`          // per rank, in ranks order
	Traces                []*TraceDocument         `json:"traces,omitempty"` // whole-file analyses of files that hold several ranks
}

// SeparateDocument is the analyze document of traces that are not one
// job (kind "separate").
type SeparateDocument struct {
	SchemaVersion int              `json:"schema_version"`
	Kind          string           `json:"kind"`
	Verdict       string           `json:"verdict"`
	Reason        string           `json:"verdict_reason"`
	Note          string           `json:"note"`
	Files         []string         `json:"files"`
	Story         Story            `json:"story"`
	Episodes      []DocEpisode     `json:"episodes"`
	Mitigations   []DocMitigation  `json:"mitigations"`
	Warnings      []string         `json:"warnings"`
	Results       []*TraceDocument `json:"results"`
}

// unit is one analysis of a document with its rank (−1 unknown; then
// each episode's rank comes from its process).
type unit struct {
	res  *analyze.Result
	rank int
}

// processRank is the rank of process pid in r, −1 when unknown.
func processRank(r *analyze.Result, pid int64) int {
	for _, p := range r.Processes {
		if p.Pid == pid {
			return p.Rank
		}
	}
	return -1
}

func (u unit) rankOf(pid int64) int {
	if u.rank >= 0 {
		return u.rank
	}
	return processRank(u.res, pid)
}

// episodesOf lists the storm episodes of us, each with where it happened.
func episodesOf(us []unit) []DocEpisode {
	out := []DocEpisode{}
	for _, u := range us {
		for _, e := range u.res.Episodes {
			out = append(out, DocEpisode{File: u.res.Trace.File, Rank: u.rankOf(e.Pid), Episode: e})
		}
	}
	return out
}

// mitigationsOf merges the mitigations of us by id: the analyses with the
// most storm time first (stably), each mitigation once, with the evidence
// of the first analysis that advised it and every file and rank that did.
func mitigationsOf(us []unit) []DocMitigation {
	order := slices.Clone(us)
	slices.SortStableFunc(order, func(a, b unit) int { return cmp.Compare(b.res.Headline.StormTimeNs, a.res.Headline.StormTimeNs) })
	out := []DocMitigation{}
	at := map[string]int{}
	for _, u := range order {
		ranks := []int{}
		if u.rank >= 0 {
			ranks = append(ranks, u.rank)
		} else {
			for _, p := range u.res.Processes {
				if p.Rank >= 0 {
					ranks = append(ranks, p.Rank)
				}
			}
		}
		for _, m := range u.res.Mitigations {
			i, ok := at[m.ID]
			if !ok {
				i = len(out)
				at[m.ID] = i
				out = append(out, DocMitigation{Mitigation: m, Files: []string{}, Ranks: []int{}})
			}
			d := &out[i]
			if !slices.Contains(d.Files, u.res.Trace.File) {
				d.Files = append(d.Files, u.res.Trace.File)
			}
			for _, r := range ranks {
				if !slices.Contains(d.Ranks, r) {
					d.Ranks = append(d.Ranks, r)
				}
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Ranks)
	}
	return out
}

// storyOf tells where the storms of us struck and the first change.
func storyOf(us []unit, ms []DocMitigation) Story {
	s := Story{Files: []string{}, Ranks: []int{}, Pids: []int64{}, Devices: []int64{}}
	var stormDur, calmDur []int64
	for _, u := range us {
		r := u.res
		if len(r.Episodes) > 0 && !slices.Contains(s.Files, r.Trace.File) {
			s.Files = append(s.Files, r.Trace.File)
		}
		for _, e := range r.Episodes {
			if rk := u.rankOf(e.Pid); rk >= 0 && !slices.Contains(s.Ranks, rk) {
				s.Ranks = append(s.Ranks, rk)
			}
			if !slices.Contains(s.Pids, e.Pid) {
				s.Pids = append(s.Pids, e.Pid)
			}
			if e.Device >= 0 && !slices.Contains(s.Devices, e.Device) {
				s.Devices = append(s.Devices, e.Device)
			}
		}
		s.SteadySteps += max(r.Steps.Count-r.Steps.WarmupSteps, 0)
		for _, st := range r.Steps.Rows {
			if st.Warmup {
				continue
			}
			if st.Episode > 0 {
				s.StormSteps++
				stormDur = append(stormDur, st.DurationNs)
			} else {
				calmDur = append(calmDur, st.DurationNs)
			}
		}
	}
	slices.Sort(s.Ranks)
	slices.Sort(s.Pids)
	slices.Sort(s.Devices)
	if len(stormDur) > 0 {
		s.StormStepP50Ns = median(stormDur)
	}
	if len(calmDur) > 0 {
		s.CalmStepP50Ns = median(calmDur)
	}
	if len(ms) > 0 {
		s.FirstChange = ms[0].ID
	}
	return s
}

// NewTraceDocument is the document of one trace's analysis.
func NewTraceDocument(r *analyze.Result) *TraceDocument {
	return traceDocument(unit{res: r, rank: -1})
}

func traceDocument(u unit) *TraceDocument {
	us := []unit{u}
	ms := mitigationsOf(us)
	d := &TraceDocument{SchemaVersion: analyze.SchemaVersion, Kind: KindTrace, Files: []string{u.res.Trace.File},
		Story: storyOf(us, ms), Episodes: episodesOf(us), Mitigations: ms, Result: *u.res}
	d.Result.SchemaVersion = analyze.SchemaVersion
	return d
}

// NewJobDocument is the document of a job.
func NewJobDocument(j *multirank.Result) *JobDocument {
	us := make([]unit, len(j.Results))
	for i, r := range j.Results {
		us[i] = unit{res: r, rank: j.Ranks[i].Rank}
	}
	ms := mitigationsOf(us)
	d := &JobDocument{SchemaVersion: analyze.SchemaVersion, Kind: KindJob, Verdict: j.Verdict, Reason: j.Reason,
		Files: orEmpty(j.Files), Story: storyOf(us, ms), Episodes: episodesOf(us), Mitigations: ms, Warnings: orEmpty(j.Warnings),
		Ranks: orEmpty(j.Ranks), Clock: j.Clock, Collective: j.Collective, JobSteps: orEmpty(j.Steps), Stragglers: orEmpty(j.Stragglers),
		Attributions: orEmpty(j.Attributions), AttributionThresholds: j.Thresholds, Results: []*TraceDocument{}}
	for _, u := range us {
		d.Results = append(d.Results, traceDocument(u))
	}
	for _, r := range j.Traces {
		d.Traces = append(d.Traces, NewTraceDocument(r))
	}
	return d
}

// NewSeparateDocument is the document of traces that are not one job.
func NewSeparateDocument(s *Separate) *SeparateDocument {
	us := make([]unit, len(s.Results))
	for i, r := range s.Results {
		us[i] = unit{res: r, rank: -1}
	}
	ms := mitigationsOf(us)
	d := &SeparateDocument{SchemaVersion: analyze.SchemaVersion, Kind: KindSeparate, Verdict: s.Verdict, Reason: s.Reason(),
		Note: s.Note, Files: orEmpty(s.Files), Story: storyOf(us, ms), Episodes: episodesOf(us), Mitigations: ms,
		Warnings: []string{}, Results: []*TraceDocument{}}
	for _, u := range us {
		d.Results = append(d.Results, traceDocument(u))
		for _, w := range u.res.Warnings {
			d.Warnings = append(d.Warnings, u.res.Trace.File+": "+w)
		}
	}
	return d
}

func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
