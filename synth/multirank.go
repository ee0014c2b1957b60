package synth

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// A multi-rank job: Ranks traces of one data-parallel run, one file per
// rank, generated in lockstep. Every step ends in an NCCL all-reduce (an
// ncclDevKernel_AllReduce kernel inside an NVTX range "nccl:all_reduce",
// then cudaStreamSynchronize): the kernel starts when its rank gets there
// and ends when the last rank has arrived, plus the transfer. The storm
// rank carries the planted episodes; the others have none, so in storm
// steps they wait in the collective for it. Each file gets its own clock:
// its timestamps are shifted by a different number of seconds and its
// session start (TARGET_INFO_SESSION_START_TIME) moved to match, so that
// session start + timestamp is the same instant on every rank; ClockErrorNs
// adds a recording error to the session start (a host clock that is off)
// that only collective matching can remove.

// stepHook runs at the end of step i's work with the host at h and returns
// the host time after the collective.
type stepHook func(g *gen, step int, h int64) int64

// JobConfig describes a multi-rank job.
type JobConfig struct {
	Ranks     int `json:"ranks"`
	StormRank int `json:"storm_rank"`
	// Rank is the per-rank run; its Episodes are planted on StormRank
	// only, and each rank's Seed is Rank.Seed + rank.
	Rank Config `json:"rank"`
	// OffsetNs spaces the ranks' clocks: rank r's timestamps are shifted
	// by perm(r) × OffsetNs (perm a seeded permutation), its session start
	// by the opposite.
	OffsetNs int64 `json:"offset_ns"`
	// ClockErrorNs: rank r's recorded session start is off by
	// (perm(r) − Ranks/2) × ClockErrorNs.
	ClockErrorNs int64 `json:"clock_error_ns"`
	// TransferNs is the all-reduce's duration once every rank has arrived.
	TransferNs int64 `json:"transfer_ns"`
}

// DefaultJobConfig is an 8-rank job with one storm episode on rank 3.
func DefaultJobConfig() JobConfig {
	c := DefaultConfig
	c.Steps = 60
	c.Episodes = 1
	c.EpisodeSteps = 8
	c.LongKernelDecoys, c.PrefetchDecoys, c.SyncBurstDecoys = 0, 0, 0
	return JobConfig{Ranks: 8, StormRank: 3, Rank: c, OffsetNs: 1_700_000_000, TransferNs: 1_200_000}
}

// JobTruth is the ground truth of a job.
type JobTruth struct {
	Generator string    `json:"generator"`
	Config    JobConfig `json:"config"`
	Files     []string  `json:"files"` // per rank, base names
	// StormRank carries Episodes (in its own trace clock, from its truth).
	StormRank int    `json:"storm_rank"`
	Episodes  []Span `json:"episodes"`
	// ShiftNs[r] was added to rank r's timestamps; SessionStartNs[r] is its
	// recorded session start (UTC ns), ClockErrorNs[r] the error in it.
	ShiftNs        []int64 `json:"shift_ns"`
	SessionStartNs []int64 `json:"session_start_ns"`
	ClockErrorNs   []int64 `json:"clock_error_ns"`
	// WaitNs[s][r] is rank r's wait in step s's collective for the last
	// rank; LastRank[s] is the last to arrive.
	WaitNs [][]int64 `json:"wait_ns"`
	// Pids[r] is rank r's process in a one-file job (GenerateJobFile).
	Pids     []int64  `json:"pids,omitempty"`
	LastRank []int    `json:"last_rank"`
	Ranks    []*Truth `json:"rank_truths"`
}

// JobTruthPath is where GenerateJob writes the job's truth.
func JobTruthPath(dir string) string { return filepath.Join(dir, "job.truth.json") }

// RankFile is rank r's trace in dir.
func RankFile(dir string, r int) string { return filepath.Join(dir, fmt.Sprintf("rank%d.sqlite", r)) }

// coord holds the ranks' arrivals at each step's collective.
type coord struct {
	mu       sync.Mutex
	cond     *sync.Cond
	alive    int
	arr      map[int][]int64 // step → arrival per rank (-1 until arrived)
	n        map[int]int
	ends     map[int]int64
	transfer int64
}

func (c *coord) arrive(rank, step int, t int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arr[step] == nil {
		c.arr[step] = make([]int64, len(c.arr[-1]))
		for i := range c.arr[step] {
			c.arr[step][i] = -1
		}
	}
	c.arr[step][rank] = t
	c.n[step]++
	c.settle()
	for {
		if e, ok := c.ends[step]; ok {
			return e
		}
		c.cond.Wait()
	}
}

// settle ends every step all living ranks have reached.
func (c *coord) settle() {
	for s, n := range c.n {
		if _, done := c.ends[s]; done || n < c.alive {
			continue
		}
		last := int64(0)
		for _, t := range c.arr[s] {
			last = max(last, t)
		}
		c.ends[s] = last + c.transfer + int64(s*7919%300)*1000
	}
	c.cond.Broadcast()
}

func (c *coord) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive--
	c.settle()
}

var ncclKernel = kernelDef{demangled: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", short: "ncclDevKernel_AllReduce_Sum_f32_RING_LL", grid: 24, block: 640, regs: 96}

// collectiveHook returns rank's all-reduce hook.
func collectiveHook(c *coord, rank int) stepHook {
	var k kernelDef
	return func(g *gen, step int, h int64) int64 {
		if k.idDem == 0 {
			k = ncclKernel
			k.idDem, k.idShort, k.id = g.str(k.demangled), g.str(k.short), g.str(k.short)
		}
		start := h
		e := h + g.rng.between(4_000, 12_000)
		corr := g.api(g.tid(0), "cudaLaunchKernel_v7000", 0, h, e)
		ks := max(g.stream[0]+g.rng.between(1_000, 3_000), h+g.rng.between(2_000, 5_000))
		ke := max(c.arrive(rank, step, ks), ks+g.rng.between(5_000, 8_000))
		g.gridID++
		g.kernel.add(ks, ke, deviceID, contextID, 0, int64(firstStrm), corr, g.gp,
			k.idDem, k.idShort, k.id, 1, 1, k.regs, k.grid, 1, 1, k.block, 1, 1,
			0, k.dynShared, 0, 155713536, g.gridID, 32768, null, 0)
		g.stream[0] = ke
		g.host[0] = e + g.rng.between(1_000, 3_000)
		r := g.streamSync(g.host[0], 0)
		g.nvtx.addText("nccl:all_reduce", start, r, 59, null, null, null, 0, g.gtid(g.tid(0)), null, null, 0, null, null, null, null, null, null, null, null, null)
		return r
	}
}

// GenerateJob writes a job's rank traces (RankFile) and its truth
// (JobTruthPath) into dir.
func GenerateJob(dir string, jc JobConfig) (*JobTruth, error) {
	if jc.Ranks < 1 || jc.Ranks > 256 || jc.StormRank < -1 || jc.StormRank >= jc.Ranks {
		return nil, fmt.Errorf("invalid job: %d ranks, storm rank %d", jc.Ranks, jc.StormRank)
	}
	if jc.TransferNs <= 0 {
		jc.TransferNs = 1_200_000
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(jc.Rank.Seed, 0x6a6f62))
	perm := rng.Perm(jc.Ranks)
	c := &coord{alive: jc.Ranks, arr: map[int][]int64{-1: make([]int64, jc.Ranks)}, n: map[int]int{}, ends: map[int]int64{}, transfer: jc.TransferNs}
	c.cond = sync.NewCond(&c.mu)
	jt := &JobTruth{Generator: "umtrace synth job v1", Config: jc, StormRank: jc.StormRank, Episodes: []Span{},
		ShiftNs: make([]int64, jc.Ranks), SessionStartNs: make([]int64, jc.Ranks), ClockErrorNs: make([]int64, jc.Ranks), Ranks: make([]*Truth, jc.Ranks)}
	errs := make([]error, jc.Ranks)
	var wg sync.WaitGroup
	for r := 0; r < jc.Ranks; r++ {
		cfg := jc.Rank
		cfg.Seed = jc.Rank.Seed + uint64(r)
		if r != jc.StormRank {
			cfg.Episodes = 0
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		path := RankFile(dir, r)
		jt.Files = append(jt.Files, filepath.Base(path))
		_ = os.Remove(path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.leave()
			jt.Ranks[r], errs[r] = generate(path, cfg, collectiveHook(c, r))
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	const base = int64(1796225512375830618) // the base export's session start
	for r := 0; r < jc.Ranks; r++ {
		jt.ShiftNs[r] = int64(perm[r]) * jc.OffsetNs
		jt.ClockErrorNs[r] = int64(perm[r]-jc.Ranks/2) * jc.ClockErrorNs
		jt.SessionStartNs[r] = base - jt.ShiftNs[r] + jt.ClockErrorNs[r]
		if err := rankify(RankFile(dir, r), r, jc.Ranks, jt.ShiftNs[r], jt.SessionStartNs[r]); err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	if jc.StormRank >= 0 {
		jt.Episodes = jt.Ranks[jc.StormRank].Episodes
		for i := range jt.Episodes { // into the shifted clock
			e := &jt.Episodes[i]
			sh := jt.ShiftNs[jc.StormRank]
			e.StartNs, e.EndNs = e.StartNs+sh, e.EndNs+sh
			e.StartWindowNs = [2]int64{e.StartWindowNs[0] + sh, e.StartWindowNs[1] + sh}
			e.EndWindowNs = [2]int64{e.EndWindowNs[0] + sh, e.EndWindowNs[1] + sh}
		}
	}
	var steps []int
	for s := range c.ends {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	for _, s := range steps {
		arr := c.arr[s]
		last := 0
		for r := range arr {
			if arr[r] > arr[last] {
				last = r
			}
		}
		w := make([]int64, len(arr))
		for r := range arr {
			w[r] = arr[last] - arr[r]
		}
		jt.WaitNs = append(jt.WaitNs, w)
		jt.LastRank = append(jt.LastRank, last)
	}
	js, err := json.MarshalIndent(jt, "", "  ")
	if err != nil {
		return nil, err
	}
	return jt, os.WriteFile(JobTruthPath(dir), append(js, '\n'), 0o644)
}

// rankify shifts a rank file's clock, sets its session start and records
// its rank in the launch environment, as torchrun would have set it.
func rankify(path string, rank, ranks int, shift, session int64) error {
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	tables := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type='table'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			tables[n] = true
		}
	}
	rows.Close()
	stmts := []string{"BEGIN"}
	for _, t := range []string{schema.Runtime.Name, schema.Kernel.Name, schema.Memcpy.Name, schema.Memset.Name,
		schema.Sync.Name, schema.GPUFault.Name, schema.NVTX.Name} {
		if tables[t] {
			stmts = append(stmts, `UPDATE `+t+` SET start=start+`+strconv.FormatInt(shift, 10)+`, "end"=CASE WHEN "end" IS NULL THEN NULL ELSE "end"+`+strconv.FormatInt(shift, 10)+` END`)
		}
	}
	for _, t := range []string{schema.CPUFault.Name, schema.MemUsage.Name} {
		if tables[t] {
			stmts = append(stmts, `UPDATE `+t+` SET start=start+`+strconv.FormatInt(shift, 10))
		}
	}
	stmts = append(stmts,
		`UPDATE `+schema.AnalysisDetails+` SET startTime=startTime+`+strconv.FormatInt(shift, 10)+`, stopTime=stopTime+`+strconv.FormatInt(shift, 10),
		`UPDATE `+schema.SessionStartTime+` SET utcEpochNs=`+strconv.FormatInt(session, 10),
		fmt.Sprintf(`INSERT INTO `+schema.MetaDataCapture+` VALUES('PROCESS_0:ENVIRONMENT_VARIABLE','RANK="%d"')`, rank),
		fmt.Sprintf(`INSERT INTO `+schema.MetaDataCapture+` VALUES('PROCESS_0:ENVIRONMENT_VARIABLE','WORLD_SIZE="%d"')`, ranks),
		"COMMIT")
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%.60s: %w", s, err)
		}
	}
	return nil
}
