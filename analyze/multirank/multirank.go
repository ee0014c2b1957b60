// Package multirank analyzes a job: many ranks analyzed together, one
// process per rank, from one file per rank or several processes of one
// file. It consumes each file's analyze.File (its processes' own
// analyses and collectives, from the file's one read), puts the ranks on
// one clock, matches their collectives, and says who waited for whom.
// docs/method.md ("Jobs") describes the method and its limits.
package multirank

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/internal/par"
	"github.com/umtrace/umtrace/ingest"
)

// Result is the analysis of a job. Its JSON form is report.JobDocument
// (docs/json.md: the same core as every analyze document, job fields beside).
type Result struct {
	SchemaVersion int               `json:"schema_version"`
	Kind          string            `json:"kind"` // "job"
	Verdict       string            `json:"verdict"`
	Reason        string            `json:"verdict_reason"`
	Files         []string          `json:"files"` // base names, sorted
	Ranks         []Rank            `json:"ranks"`
	Clock         ClockAlignment    `json:"clock"`
	Collective    string            `json:"collective_source"` // "nccl kernels", "nvtx ranges" or "none"
	Steps         []Step            `json:"steps"`
	Stragglers    []Straggler       `json:"stragglers"`
	Attributions  []Attribution     `json:"attributions"`
	Warnings      []string          `json:"warnings"`
	Results       []*analyze.Result `json:"results"`          // per rank, in Ranks order
	Traces        []*analyze.Result `json:"traces,omitempty"` // whole-file analyses of files that hold several ranks
	Thresholds    Thresholds        `json:"thresholds"`
	steps         map[int]*Step
}

// Thresholds tune straggler attribution.
type Thresholds struct {
	// A collective's late arrival is attributed when the last rank arrived
	// at least MinSkewNs, and MinSkewShare of the median step time, after
	// the median rank.
	MinSkewNs    int64   `json:"min_skew_ns"`
	MinSkewShare float64 `json:"min_skew_share"`
}

// DefaultThresholds are the attribution defaults.
var DefaultThresholds = Thresholds{MinSkewNs: 1_000_000, MinSkewShare: 0.1}

// Rank is one rank's row of the per-rank table.
type Rank struct {
	Rank              int     `json:"rank"`
	RankSource        string  `json:"rank_source"` // env RANK, nvtx, process name, file order
	File              string  `json:"file"`
	Pid               int64   `json:"pid"`
	Device            int64   `json:"device"` // -1 when unknown
	Verdict           string  `json:"verdict"`
	StormNs           int64   `json:"storm_ns"`
	Episodes          int     `json:"episodes"`
	GPUFaults         int64   `json:"gpu_faults"`
	CPUFaults         int64   `json:"cpu_faults"`
	Steps             int     `json:"steps"`
	StepP50Ns         float64 `json:"step_p50_ns"`
	HostBlockedNs     int64   `json:"host_blocked_ns"`
	SyncP99Ns         float64 `json:"sync_p99_ns"`
	Collectives       int     `json:"collectives"`
	CollectiveNs      int64   `json:"collective_ns"`       // time in collectives (NCCL kernels or NVTX collective ranges)
	CollectiveShare   float64 `json:"collective_share"`    // of the rank's step time (of its span without steps)
	WaitOnOthersNs    int64   `json:"wait_on_others_ns"`   // collective time attributed to other ranks' storms
	CausedWaitNs      int64   `json:"caused_wait_ns"`      // other ranks' collective wait attributed to this rank's storms
	ClockOffsetNs     int64   `json:"clock_offset_ns"`     // added to the rank's timestamps (session start, UTC)
	ClockCorrectionNs int64   `json:"clock_correction_ns"` // added on top from matched collective ends
}

// ClockAlignment says how the ranks were put on one clock.
type ClockAlignment struct {
	Method       string `json:"method"`
	ZeroUTCNs    int64  `json:"zero_utc_ns"`   // job time 0, UTC ns (the earliest session start)
	ResidualNs   int64  `json:"residual_ns"`   // largest median |collective end difference| left after alignment
	SpreadNs     int64  `json:"spread_ns"`     // largest spread (P90 − P10) of collective end differences: the error bound
	MatchedRanks int    `json:"matched_ranks"` // ranks whose collectives were matched
	Note         string `json:"note"`
	// Refused lists the files whose collective-end correction the
	// matched collectives do not support: their clocks stay as the
	// session starts put them (clock_correction_ns 0).
	Refused []RefusedCorrection `json:"refused_corrections"`
}

// RefusedCorrection is a clock correction the evidence did not support.
type RefusedCorrection struct {
	File         string `json:"file"`
	CorrectionNs int64  `json:"correction_ns"` // the median collective-end difference's correction, not applied
	Matched      int    `json:"matched"`       // collectives matched by position with the reference rank
	Overlapping  int    `json:"overlapping"`   // of those, pairs that would overlap in time after the correction
	Reason       string `json:"reason"`
}

// minClockEvidence is how many matched collectives a clock correction
// needs; minOverlapShare is the share of them that must overlap in time
// on both clocks once corrected (a collective holds every rank until the
// last one arrives, so the same collective on two ranks shares a moment).
const (
	minClockEvidence = 3
	minOverlapShare  = 0.9
)

// Step is one step across the ranks.
type Step struct {
	Step         int     `json:"step"`
	Ranks        int     `json:"ranks"` // ranks that have the step
	SlowestRank  int     `json:"slowest_rank"`
	SlowestNs    int64   `json:"slowest_ns"`
	MedianNs     float64 `json:"median_ns"`
	SkewNs       int64   `json:"skew_ns"`       // slowest − median step time
	LateRank     int     `json:"late_rank"`     // last to arrive at the step's collective, -1 when none
	LateNs       int64   `json:"late_ns"`       // its arrival after the median arrival
	WaitNs       int64   `json:"wait_ns"`       // the other ranks' wait for it
	CollectiveNs []int64 `json:"collective_ns"` // per rank (Ranks order): time in collectives in the step
	StormRanks   []int   `json:"storm_ranks"`   // ranks with a storm episode in the step
}

// Straggler sums the waits attributed to one rank.
type Straggler struct {
	Rank        int   `json:"rank"`
	Collectives int   `json:"collectives"`
	Steps       int   `json:"steps"`
	WaitNs      int64 `json:"wait_ns"` // other ranks' collective wait attributed to its storms
	Episodes    []int `json:"episodes"`
	GPUFaults   int64 `json:"gpu_faults"` // in the attributed steps
	CPUFaults   int64 `json:"cpu_faults"`
}

// Attribution is one collective delayed by a storming rank.
type Attribution struct {
	Step          int        `json:"step"` // the straggler's step, -1 when it has none
	Collective    string     `json:"collective"`
	Index         int        `json:"index"` // the collective's position in every rank's sequence
	StragglerRank int        `json:"straggler_rank"`
	Episode       int        `json:"episode"` // the straggler's storm episode
	LateNs        int64      `json:"late_ns"` // its arrival after the median arrival
	WaitNs        int64      `json:"wait_ns"` // sum of the waiters' wait
	Waiters       []RankWait `json:"waiters"`
	GPUFaults     int64      `json:"gpu_faults"` // the straggler's faults in the step (in the episode without steps)
	CPUFaults     int64      `json:"cpu_faults"`
	StallNs       int64      `json:"stall_ns"` // the straggler's stalled host time before it arrived
}

// RankWait is one waiting rank's share.
type RankWait struct {
	Rank   int   `json:"rank"`
	WaitNs int64 `json:"wait_ns"`
}

// collective is one collective call on one rank, in the rank's own clock.
type collective = analyze.Collective

// rankIn is one rank while the job is analyzed.
type rankIn struct {
	info    *ingest.TraceInfo
	env     map[string]string // the launch environment: the file's, when the rank is the whole file
	file    string
	pid     int64
	res     *analyze.Result
	rank    int
	rankSrc string
	dev     int64
	kern    []collective // NCCL kernels
	ranges  []collective // NVTX collective ranges
	col     []collective // the ones used
	offset  int64        // session start − job zero
	corr    int64        // clock correction
	order   int

	waitOnOthers, causedWait int64

	// Filled from collectives.
	devTime  map[int64]int64
	nvtxRank int

	stepsSorted int     // stepAt: 1 when the step rows are disjoint and in time order, -1 when not, 0 unknown
	colMaxEnd   []int64 // colOverlap: running maximum of col's ends
}

// fill gives ri what the pass read of process pid or, with whole, of every
// row of the file (the rank named by the first NVTX row that names one).
func fill(ri *rankIn, cs *analyze.Collectives, pid int64, whole bool) {
	ri.devTime, ri.nvtxRank = map[int64]int64{}, -1
	ri.kern, ri.ranges = nil, nil
	row := int64(-1)
	for p, devs := range cs.KernelNs {
		if whole || p == pid {
			for d, ns := range devs {
				ri.devTime[d] += ns
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(cs.Kernels)) {
		if whole || p == pid {
			ri.kern = append(ri.kern, cs.Kernels[p]...)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(cs.Ranges)) {
		if whole || p == pid {
			ri.ranges = append(ri.ranges, cs.Ranges[p]...)
		}
	}
	for p, r := range cs.NVTXRanks {
		if (whole || p == pid) && r.Rank >= 0 && (row < 0 || r.Row < row) {
			ri.nvtxRank, row = r.Rank, r.Row
		}
	}
}

// finishCollectives sorts what fill gave and settles the rank's
// device and rank.
func (ri *rankIn) finishCollectives() {
	ri.dev = -1
	for d, ns := range ri.devTime {
		if ri.dev < 0 || ns > ri.devTime[ri.dev] || (ns == ri.devTime[ri.dev] && d < ri.dev) {
			ri.dev = d
		}
	}
	ri.devTime = nil
	for _, l := range [][]collective{ri.kern, ri.ranges} {
		slices.SortFunc(l, func(x, y collective) int {
			return cmp.Or(cmp.Compare(x.StartNs, y.StartNs), cmp.Compare(x.EndNs, y.EndNs), cmp.Compare(x.Name, y.Name))
		})
	}
	switch r, s := analyze.RankFromEnv(ri.env); {
	case r >= 0:
		ri.rank, ri.rankSrc = r, s
	case ri.nvtxRank >= 0:
		ri.rank, ri.rankSrc = ri.nvtxRank, "nvtx"
	case analyze.RankFromText(ri.info.ProcessNames[ri.pid]) >= 0:
		ri.rank, ri.rankSrc = analyze.RankFromText(ri.info.ProcessNames[ri.pid]), "process name"
	default:
		ri.rank, ri.rankSrc = -1, ""
	}
}

// Analyze analyzes the files of one job, each analyzed with
// analyze.Options.SplitProcesses (analyze.AnalyzeFile): a file that holds
// several CUDA processes contributes one rank per process, any other file
// one rank.
func Analyze(files []*analyze.File) (*Result, error) {
	jr := &Result{SchemaVersion: analyze.SchemaVersion, Kind: "job", Thresholds: DefaultThresholds, Warnings: []string{}}
	var ranks []*rankIn
	for _, f := range files {
		if f.Collectives == nil {
			return nil, fmt.Errorf("%s: analyzed without SplitProcesses: no collectives for a job", f.Name)
		}
		jr.Files = append(jr.Files, f.Name)
		if len(f.Processes) > 1 {
			jr.Traces = append(jr.Traces, f.Whole)
			for k, p := range f.Pids {
				// The launch environment (rank variables) belongs to
				// the process nsys started, not to each of its children.
				ri := &rankIn{info: f.Info, file: f.Name, pid: p, res: f.Processes[k]}
				fill(ri, f.Collectives, p, false)
				ri.finishCollectives()
				ranks = append(ranks, ri)
			}
			continue
		}
		ri := &rankIn{info: f.Info, env: f.Info.LaunchEnv, file: f.Name, res: f.Whole}
		if len(f.Pids) == 1 {
			ri.pid = f.Pids[0]
		}
		fill(ri, f.Collectives, 0, true)
		ri.finishCollectives()
		ranks = append(ranks, ri)
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("job: no traces: %w", ingest.ErrNoCUDA)
	}
	slices.Sort(jr.Files)
	assignRanks(ranks, jr)
	jr.alignClocks(ranks)
	jr.buildSteps(ranks)
	jr.matchCollectives(ranks)
	jr.finish(ranks)
	return jr, nil
}

// assignRanks orders the ranks and numbers them: by the rank each names
// (environment, NVTX, process name) when every rank names a distinct one,
// else by file name and pid. Either way the order does not depend on the
// order the files were given in.
func assignRanks(ranks []*rankIn, jr *Result) {
	slices.SortFunc(ranks, func(x, y *rankIn) int {
		return cmp.Or(cmp.Compare(x.file, y.file), cmp.Compare(x.pid, y.pid))
	})
	named := true
	seen := map[int]bool{}
	for _, r := range ranks {
		if r.rank < 0 || seen[r.rank] {
			named = false
		}
		seen[r.rank] = true
	}
	if named {
		slices.SortFunc(ranks, func(x, y *rankIn) int { return cmp.Compare(x.rank, y.rank) })
	} else {
		for i, r := range ranks {
			if r.rank >= 0 {
				jr.Warnings = append(jr.Warnings, fmt.Sprintf("%s pid %d names rank %d (%s), but the ranks named are not distinct: ranks are numbered by file name and pid", r.file, r.pid, r.rank, r.rankSrc))
				break
			}
			_ = i
		}
		for i, r := range ranks {
			r.rank, r.rankSrc = i, "file order"
		}
	}
	for i, r := range ranks {
		r.order = i
	}
}

// alignClocks puts every rank on job time: its session start (UTC) minus
// the earliest session start; then, when every rank has the same number of
// collectives, corrects each file by the median difference of its
// collectives' ends to the reference rank's (a collective ends at about the
// same moment on every rank, whatever the hosts' clocks say).
func (jr *Result) alignClocks(ranks []*rankIn) {
	c := &jr.Clock
	c.Refused = []RefusedCorrection{}
	zero := int64(0)
	have := 0
	for _, r := range ranks {
		if u := r.info.SessionStartUTCNs; u != 0 {
			if have == 0 || u < zero {
				zero = u
			}
			have++
		}
	}
	c.ZeroUTCNs = zero
	c.Method = "session start (TARGET_INFO_SESSION_START_TIME.utcEpochNs)"
	if have < len(ranks) {
		c.Method = "trace clocks as recorded (some exports lack a session start time)"
		jr.Warnings = append(jr.Warnings, fmt.Sprintf("%d of %d ranks have no session start time: their clocks are used as recorded", len(ranks)-have, len(ranks)))
	}
	for _, r := range ranks {
		if u := r.info.SessionStartUTCNs; u != 0 && have == len(ranks) {
			r.offset = u - zero
		}
	}
	// Pick the collective source every rank has: NCCL kernels, else NVTX ranges.
	src := "none"
	allK, allR := true, true
	for _, r := range ranks {
		allK = allK && len(r.kern) > 0
		allR = allR && len(r.ranges) > 0
	}
	switch {
	case allK:
		src = "nccl kernels"
		for _, r := range ranks {
			r.col = r.kern
		}
	case allR:
		src = "nvtx ranges"
		for _, r := range ranks {
			r.col = r.ranges
		}
	}
	jr.Collective = src
	if src == "none" || len(ranks) < 2 {
		c.Note = "no collectives on every rank: clocks aligned by session start only; its error is the hosts' clock difference (NTP: typically well under a millisecond on one host, milliseconds across hosts)"
		return
	}
	n := len(ranks[0].col)
	for _, r := range ranks {
		if len(r.col) != n {
			n = -1
			break
		}
	}
	if n < 1 {
		c.Note = "the ranks ran different numbers of collectives: clocks aligned by session start only"
		jr.Warnings = append(jr.Warnings, "collective counts differ between ranks: collectives matched by position up to the shortest rank, clocks not refined")
		return
	}
	ref := ranks[0]
	byFile := map[string][]int64{}
	var files []string
	for _, r := range ranks[1:] {
		if r.file == ref.file {
			continue // one clock per file; the reference file keeps its own
		}
		if _, ok := byFile[r.file]; !ok {
			files = append(files, r.file)
		}
		for k := 0; k < n; k++ {
			byFile[r.file] = append(byFile[r.file], (r.col[k].EndNs+r.offset)-(ref.col[k].EndNs+ref.offset))
		}
	}
	corr := map[string]int64{}
	for _, f := range files {
		d := slices.Clone(byFile[f])
		slices.Sort(d)
		corr[f] = -d[len(d)/2]
	}
	jr.refuseUnsupported(ranks, ref, files, corr, n)
	for _, r := range ranks {
		r.corr = corr[r.file]
	}
	if len(c.Refused) < len(files) {
		c.Method += " + collective-end refinement"
	}
	for _, r := range ranks[1:] {
		var d []int64
		for k := 0; k < n; k++ {
			d = append(d, (r.col[k].EndNs+r.offset+r.corr)-(ref.col[k].EndNs+ref.offset+ref.corr))
		}
		slices.Sort(d)
		c.ResidualNs = max(c.ResidualNs, abs64(d[len(d)/2]))
		lo, hi := d[len(d)/10], d[(len(d)*9)/10]
		c.SpreadNs = max(c.SpreadNs, hi-lo)
	}
	c.MatchedRanks = len(ranks)
	c.Note = fmt.Sprintf("each file's clock is shifted so that its %d collectives end, in median, when rank %d's do; the spread of the end differences left (P10–P90, %s) bounds the alignment error", n, ref.rank, analyze.FormatNs(float64(c.SpreadNs)))
	if len(files) == 0 {
		// Every rank in the reference rank's file: one clock, nothing to shift.
		c.Note = fmt.Sprintf("every rank is in one file, on one clock: nothing is shifted; the spread of the %d collectives' end differences (P10–P90, %s) is how far apart the ranks leave them", n, analyze.FormatNs(float64(c.SpreadNs)))
	}
	if len(c.Refused) > 0 {
		var fs []string
		for _, x := range c.Refused {
			fs = append(fs, fmt.Sprintf("%s (%s: %s)", x.File, analyze.FormatNs(float64(abs64(x.CorrectionNs))), x.Reason))
		}
		c.Note = fmt.Sprintf("the %d matched collectives do not support the clock correction of %s, kept on its session-start clock; the residual and spread are those left on the clocks used", n, strings.Join(fs, "; "))
		if len(c.Refused) < len(files) {
			c.Note = fmt.Sprintf("each other file's clock is shifted so that its %d collectives end, in median, when rank %d's do (spread P10–P90 %s); %s", n, ref.rank, analyze.FormatNs(float64(c.SpreadNs)), c.Note)
		}
	}
}

// refuseUnsupported takes out of corr (by file) each clock correction
// the n matched collectives do not support, and says so in jr's clock and
// warnings. A correction stands only where the collectives support it:
// enough of them, and once shifted, nearly every pair sharing a moment.
// Two recordings that are not one job's (or collectives matched wrongly)
// give a median difference all the same: a "correction" of seconds that
// no collective bears out.
func (jr *Result) refuseUnsupported(ranks []*rankIn, ref *rankIn, files []string, corr map[string]int64, n int) {
	c := &jr.Clock
	for _, f := range files {
		if corr[f] == 0 {
			continue
		}
		matched, overlapping := 0, 0
		for _, r := range ranks[1:] {
			if r.file != f {
				continue
			}
			s := r.offset + corr[f]
			for k := 0; k < n; k++ {
				matched++
				if r.col[k].StartNs+s <= ref.col[k].EndNs+ref.offset && ref.col[k].StartNs+ref.offset <= r.col[k].EndNs+s {
					overlapping++
				}
			}
		}
		var why string
		switch {
		case n < minClockEvidence:
			why = fmt.Sprintf("%d matched collectives are too few to support a clock correction (it takes %d)", n, minClockEvidence)
		case float64(overlapping) < minOverlapShare*float64(matched):
			why = fmt.Sprintf("after it only %d of %d matched collectives would overlap in time with rank %d's (a collective holds every rank until the last arrives; it takes %.0f%%): they are not the same collectives on one clock", overlapping, matched, ref.rank, 100*minOverlapShare)
		default:
			continue
		}
		c.Refused = append(c.Refused, RefusedCorrection{File: f, CorrectionNs: corr[f], Matched: matched, Overlapping: overlapping, Reason: why})
		jr.Warnings = append(jr.Warnings, fmt.Sprintf("clock correction of %s for %s refused: %s; its clock stays as its session start puts it", analyze.FormatNs(float64(abs64(corr[f]))), f, why))
		delete(corr, f)
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func (r *rankIn) shift() int64 { return r.offset + r.corr }

// stepAt returns the index of the rank's step row holding t (rank clock), or -1.
func (r *rankIn) stepAt(t int64) int {
	rows := r.res.Steps.Rows
	if r.stepsSorted == 0 {
		r.stepsSorted = 1
		for i := 1; i < len(rows); i++ {
			if rows[i].StartNs < rows[i-1].StartNs+rows[i-1].DurationNs {
				r.stepsSorted = -1 // overlapping or out of order: look at every row
				break
			}
		}
	}
	if r.stepsSorted > 0 {
		// Disjoint rows in time order: the only candidate is the last row
		// starting at or before t.
		i := sort.Search(len(rows), func(i int) bool { return rows[i].StartNs > t }) - 1
		if i >= 0 && t < rows[i].StartNs+rows[i].DurationNs {
			return rows[i].Index
		}
		return -1
	}
	for i := range rows {
		if t >= rows[i].StartNs && t < rows[i].StartNs+rows[i].DurationNs {
			return rows[i].Index
		}
	}
	return -1
}

// colOverlap is the rank's time in collectives within [lo,hi) (rank
// clock), summed over its collectives (sorted by start). It only reads
// the rank (colPrefix made its running maximum before).
func (r *rankIn) colOverlap(lo, hi int64) int64 {
	var ns int64
	// Collectives starting before hi, walked back while any of those
	// before could still end after lo.
	k := sort.Search(len(r.col), func(k int) bool { return r.col[k].StartNs >= hi }) - 1
	for ; k >= 0 && r.colMaxEnd[k] > lo; k-- {
		if o := min(hi, r.col[k].EndNs) - max(lo, r.col[k].StartNs); o > 0 {
			ns += o
		}
	}
	return ns
}

// colPrefix makes colMaxEnd, the running maximum of the collectives' ends
// that colOverlap walks back by.
func (r *rankIn) colPrefix() {
	r.colMaxEnd = make([]int64, len(r.col))
	m := int64(math.MinInt64)
	for k, c := range r.col {
		m = max(m, c.EndNs)
		r.colMaxEnd[k] = m
	}
}

// episodeAt returns the storm episode of the rank overlapping [lo,hi) (rank clock).
func (r *rankIn) episodeAt(lo, hi int64) *analyze.Episode {
	for i := range r.res.Episodes {
		e := &r.res.Episodes[i]
		if e.StartNs < hi && e.EndNs > lo {
			return e
		}
	}
	return nil
}

// matchCollectives matches the k-th collective of every rank, finds the
// last to arrive, and attributes the others' wait to its storm.
func (jr *Result) matchCollectives(ranks []*rankIn) {
	jr.Attributions = []Attribution{}
	if jr.Collective == "none" || len(ranks) < 2 {
		return
	}
	n := len(ranks[0].col)
	for _, r := range ranks {
		n = min(n, len(r.col))
	}
	medStep := 0.0
	var ps []float64
	for _, r := range ranks {
		if r.res.Steps.Count > 0 {
			ps = append(ps, r.res.Steps.Duration.Median)
		}
	}
	if len(ps) > 0 {
		slices.Sort(ps)
		medStep = ps[len(ps)/2]
	}
	minSkew := max(float64(jr.Thresholds.MinSkewNs), jr.Thresholds.MinSkewShare*medStep)
	for k := 0; k < n; k++ {
		arr := make([]int64, len(ranks))
		for i, r := range ranks {
			arr[i] = r.col[k].StartNs + r.shift()
		}
		late := 0
		for i := range arr {
			if arr[i] > arr[late] {
				late = i
			}
		}
		sorted := slices.Clone(arr)
		slices.Sort(sorted)
		med := sorted[len(sorted)/2]
		if len(sorted)%2 == 0 {
			med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		}
		lateNs := arr[late] - med
		L := ranks[late]
		step := L.stepAt(L.col[k].StartNs)
		js := jr.step(step, ranks)
		var waits []RankWait
		var total int64
		for i, r := range ranks {
			if i == late {
				continue
			}
			w := min(arr[late]-arr[i], r.col[k].EndNs-r.col[k].StartNs)
			if w > 0 {
				waits = append(waits, RankWait{Rank: r.rank, WaitNs: w})
				total += w
			}
		}
		if js != nil && lateNs > js.LateNs {
			js.LateRank, js.LateNs, js.WaitNs = L.rank, lateNs, total
		}
		if float64(lateNs) < minSkew {
			continue
		}
		// The straggler's storm: an episode between its previous
		// collective's end (or its step's start) and this arrival.
		lo := L.col[k].StartNs - int64(medStep)
		if k > 0 {
			lo = L.col[k-1].EndNs
		}
		e := L.episodeAt(lo, L.col[k].StartNs)
		if e == nil {
			continue
		}
		a := Attribution{Step: step, Collective: L.col[k].Name, Index: k, StragglerRank: L.rank, Episode: e.Index, LateNs: lateNs, WaitNs: total, Waiters: waits}
		if step >= 0 {
			for _, s := range L.res.Steps.Rows { // once per attribution
				if s.Index == step {
					a.GPUFaults, a.CPUFaults = s.GPUFaults, s.CPUFaults
				}
			}
		} else {
			a.GPUFaults, a.CPUFaults = e.GPUFaults, e.CPUFaults
		}
		a.StallNs = L.stalledIn(lo, L.col[k].StartNs)
		jr.Attributions = append(jr.Attributions, a)
		for _, w := range waits {
			ranks[rankIndex(ranks, w.Rank)].waitOnOthers += w.WaitNs
		}
		L.causedWait += total
	}
}

func rankIndex(ranks []*rankIn, rank int) int {
	for i, r := range ranks {
		if r.rank == rank {
			return i
		}
	}
	return -1
}

// stalledIn is the rank's stalled host time in storm episodes within [lo,hi):
// the episodes' stalled time, pro rata to the overlap.
func (r *rankIn) stalledIn(lo, hi int64) int64 {
	var ns int64
	for _, e := range r.res.Episodes {
		o := min(hi, e.EndNs) - max(lo, e.StartNs)
		if o > 0 && e.DurationNs > 0 {
			ns += int64(float64(e.StalledNs) * float64(o) / float64(e.DurationNs))
		}
	}
	return ns
}

// step returns the job step with index i (nil for -1 or a step no rank has).
func (jr *Result) step(i int, _ []*rankIn) *Step {
	if i < 0 {
		return nil
	}
	return jr.steps[i]
}

// buildSteps makes the per-step table: step time per rank (steps matched
// by index), the slowest rank, time in collectives per rank, storming ranks.
func (jr *Result) buildSteps(ranks []*rankIn) {
	// Every rank's step rows by step index (then rank, then row), in one
	// list: a counting sort when the indexes are dense (they number the
	// steps), a stable sort otherwise. Maps of the indexes to lists cost
	// an allocation per step and rank (130k steps in a 12M-row trace).
	type ref struct{ idx, ri, k int }
	var refs []ref
	lo, hi := math.MaxInt, math.MinInt
	for ri, r := range ranks {
		for k, s := range r.res.Steps.Rows {
			refs = append(refs, ref{s.Index, ri, k})
			lo, hi = min(lo, s.Index), max(hi, s.Index)
		}
	}
	if total := len(refs); total > 0 && hi-lo < 2*total+1024 {
		at := make([]int, hi-lo+2)
		for _, x := range refs {
			at[x.idx-lo+1]++
		}
		for i := 1; i < len(at); i++ {
			at[i] += at[i-1]
		}
		sorted := make([]ref, total)
		for _, x := range refs {
			sorted[at[x.idx-lo]] = x
			at[x.idx-lo]++
		}
		refs = sorted
	} else {
		slices.SortStableFunc(refs, func(x, y ref) int { return cmp.Compare(x.idx, y.idx) })
	}
	// The steps are groups of refs of one index, made in chunks
	// concurrently (each reads the ranks and writes its own Step).
	var bounds []int
	for g := range refs {
		if g == 0 || refs[g].idx != refs[g-1].idx {
			bounds = append(bounds, g)
		}
	}
	bounds = append(bounds, len(refs))
	for _, r := range ranks {
		r.colPrefix()
	}
	steps := make([]Step, len(bounds)-1)
	par.Chunks(len(steps), 1<<10, func(lo, hi int) {
		var ds []int64
		for g := lo; g < hi; g++ {
			group := refs[bounds[g]:bounds[g+1]]
			js := &steps[g]
			*js = Step{Step: group[0].idx, Ranks: len(group), LateRank: -1, CollectiveNs: make([]int64, len(ranks)), StormRanks: []int{}}
			ds = ds[:0]
			for _, x := range group {
				r := ranks[x.ri]
				s := &r.res.Steps.Rows[x.k]
				d := s.DurationNs
				ds = append(ds, d)
				if d > js.SlowestNs || (d == js.SlowestNs && r.rank < js.SlowestRank) {
					js.SlowestRank, js.SlowestNs = r.rank, d
				}
				js.CollectiveNs[x.ri] += r.colOverlap(s.StartNs, s.StartNs+s.DurationNs)
				if s.Episode > 0 {
					js.StormRanks = append(js.StormRanks, r.rank)
				}
			}
			js.MedianNs = round1(analyze.Median(ds))
			js.SkewNs = js.SlowestNs - int64(js.MedianNs)
		}
	})
	jr.steps = make(map[int]*Step, len(steps))
	for g := range steps {
		jr.steps[steps[g].Step] = &steps[g]
		jr.Steps = append(jr.Steps, steps[g])
	}
}

// finish fills the per-rank table, the stragglers and the verdict.
func (jr *Result) finish(ranks []*rankIn) {
	// matchCollectives updated the steps through the map.
	for i := range jr.Steps {
		jr.Steps[i] = *jr.steps[jr.Steps[i].Step]
	}
	if jr.Steps == nil {
		jr.Steps = []Step{}
	}
	jr.Ranks = make([]Rank, len(ranks))
	jr.Results = make([]*analyze.Result, len(ranks))
	storming := []string{}
	for i, r := range ranks {
		res := r.res
		row := Rank{Rank: r.rank, RankSource: r.rankSrc, File: r.file, Pid: r.pid, Device: r.dev, Verdict: res.Verdict,
			StormNs: res.Headline.StormTimeNs, Episodes: len(res.Episodes), GPUFaults: res.Headline.GPUFaults, CPUFaults: res.Headline.CPUFaults,
			Steps: res.Steps.Count, StepP50Ns: res.Steps.Duration.Median, HostBlockedNs: res.Headline.BlockedNs, SyncP99Ns: res.Headline.SyncP99Ns,
			Collectives: len(r.col), WaitOnOthersNs: r.waitOnOthers, CausedWaitNs: r.causedWait, ClockOffsetNs: r.offset, ClockCorrectionNs: r.corr}
		for _, c := range r.col {
			row.CollectiveNs += c.EndNs - c.StartNs
		}
		span := res.Steps.Duration.Total
		if span == 0 {
			span = res.Trace.DurationNs
		}
		if span > 0 {
			row.CollectiveShare = round3(float64(row.CollectiveNs) / float64(span))
		}
		jr.Ranks[i] = row
		jr.Results[i] = res
		if res.Verdict == analyze.VerdictStorm {
			storming = append(storming, fmt.Sprint(r.rank))
		}
	}
	// Stragglers.
	by := map[int]*Straggler{}
	steps := map[int]map[int]bool{}
	for _, a := range jr.Attributions {
		s := by[a.StragglerRank]
		if s == nil {
			s = &Straggler{Rank: a.StragglerRank, Episodes: []int{}}
			by[a.StragglerRank] = s
			steps[a.StragglerRank] = map[int]bool{}
		}
		s.Collectives++
		s.WaitNs += a.WaitNs
		if !slices.Contains(s.Episodes, a.Episode) {
			s.Episodes = append(s.Episodes, a.Episode)
		}
		if !steps[a.StragglerRank][a.Step] {
			steps[a.StragglerRank][a.Step] = true
			s.GPUFaults += a.GPUFaults
			s.CPUFaults += a.CPUFaults
		}
	}
	jr.Stragglers = []Straggler{}
	for r, s := range by {
		s.Steps = len(steps[r])
		slices.Sort(s.Episodes)
		jr.Stragglers = append(jr.Stragglers, *s)
	}
	slices.SortFunc(jr.Stragglers, func(x, y Straggler) int { return cmp.Or(cmp.Compare(y.WaitNs, x.WaitNs), cmp.Compare(x.Rank, y.Rank)) })
	switch {
	case len(storming) > 0:
		jr.Verdict = analyze.VerdictStorm
		jr.Reason = fmt.Sprintf("storm on rank %s of %d", strings.Join(storming, ", "), len(ranks))
		if len(jr.Stragglers) > 0 {
			s := jr.Stragglers[0]
			jr.Reason += fmt.Sprintf("; rank %d's storm delayed %d collectives: the other ranks waited %s for it", s.Rank, s.Collectives, analyze.FormatNs(float64(s.WaitNs)))
		}
	default:
		jr.Verdict = analyze.VerdictNoStorm
		jr.Reason = fmt.Sprintf("no storm on any of the %d ranks", len(ranks))
		insufficient := 0
		for _, r := range ranks {
			if r.res.Verdict == analyze.VerdictInsufficient {
				insufficient++
			}
		}
		if insufficient == len(ranks) {
			jr.Verdict = analyze.VerdictInsufficient
			jr.Reason = "insufficient data on every rank: " + ranks[0].res.Reason
		}
	}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
