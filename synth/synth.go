package synth

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/umtrace/umtrace/ingest/nsys/schema"
	"github.com/umtrace/umtrace/internal/outfile"
)

// baseSQL holds the CREATE TABLE statements of every table Generate
// writes, exactly as nsys 2025.3.2 (export schema 3.20.3) writes them,
// and the fixed rows of the ENUM_*, META_DATA_*, TARGET_INFO_GPU,
// TARGET_INFO_SYSTEM_ENV and TARGET_INFO_SESSION_START_TIME tables, copied
// from shared/traces/torch_mlp_managed.sqlite.
//
//go:embed nsys_base.sql
var baseSQL string

// Identity of the synthetic process.
const (
	vmID       = int64(1) << 48
	pid        = 4242
	globalPid  = vmID | pid<<24
	deviceID   = 0
	contextID  = 1
	nullStream = 7
	firstStrm  = 13

	managedBase  = int64(0x7f1000000000)
	managedBytes = int64(8) << 30
	pageBytes    = 4096
	invalidID    = 4294967295 // CUPTI's 0xFFFFFFFF

	prefetchesIn  = 8 // cudaMemPrefetchAsync to the GPU per prefetch-decoy step
	prefetchesOut = 4 // and back to the host
	prefetchBytes = 2 << 20
)

// Tables that exist only when they have rows, as in a lazy nsys export.
var lazyTables = []string{
	schema.Memset.Name, schema.NVTX.Name,
	schema.GPUFault.Name, schema.CPUFault.Name,
}

// kernelDef is one kernel of the catalog.
type kernelDef struct {
	demangled, short   string
	grid, block, regs  int64
	dynShared          int64
	idDem, idShort, id int64 // StringIds; id is the mangled name
}

var kernelCatalog = []kernelDef{
	{demangled: "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, T2, T3)", short: "vectorized_elementwise_kernel", grid: 1024, block: 128, regs: 28},
	{demangled: "ampere_sgemm_128x64_nn", short: "ampere_sgemm_128x64_nn", grid: 256, block: 128, regs: 122, dynShared: 12288},
	{demangled: "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(T1::Params)", short: "Kernel2", grid: 132, block: 256, regs: 128, dynShared: 73728},
	{demangled: "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>>(T3)", short: "reduce_kernel", grid: 64, block: 512, regs: 40},
	{demangled: "void at::native::<unnamed>::cunn_SoftMaxForward<4, float, float, float, at::native::<unnamed>::LogSoftMaxForwardEpilogue>(T4 *, const T2 *, int)", short: "cunn_SoftMaxForward", grid: 512, block: 256, regs: 32},
	{demangled: "void at::native::elementwise_kernel<128, 2, void at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)", short: "elementwise_kernel", grid: 2048, block: 128, regs: 30},
	{demangled: "void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<4>, at::native::<unnamed>::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float *, float, float, float, float, float, float, bool *, const float *>(T1, T2, T3...)", short: "multi_tensor_apply_kernel", grid: 320, block: 512, regs: 64},
	{demangled: "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false, false>(cublasLt::cublasSplitKParams<T6>, const T4 *, const T5 *, T5 *, const T6 *, const T6 *, const T7 *)", short: "splitKreduce_kernel", grid: 96, block: 512, regs: 32},
}

var longKernelDef = kernelDef{demangled: "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, false, true, false, false>(Flash_fwd_params)", short: "flash_fwd_kernel", grid: 4096, block: 128, regs: 255, dynShared: 98304}

var tinyKernelDef = kernelDef{demangled: "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(float) (instance 1)], at::detail::Array<char *, 2>>(int, T1, T2)", short: "unrolled_elementwise_kernel", grid: 1, block: 128, regs: 16}

// stepKind is what a step plants.
type stepKind uint8

const (
	kindNormal stepKind = iota
	kindStorm
	kindLongKernel
	kindPrefetch
	kindSyncBurst
)

var kindNames = [...]string{"normal", "storm", "long_kernel", "prefetch_burst", "sync_burst"}

// gen is the state of one generation.
type gen struct {
	cfg Config
	rng rng

	*export // the tables and strings written (export.go)
	procs   // the process rows are written for (shape.go)

	gridID int64
	host   []int64 // host thread clocks
	stream []int64 // stream clocks (end of the last GPU op)
	copyEn int64   // end of the last UM migration on the copy engine
	page   int64   // next managed page to fault

	kernelBase []int64 // base duration of kernel slot j
	kernels    []kernelDef
	names      map[string]int64

	truth   *Truth
	stepDur []int64 // durations of normal steps

	shapeState // shape.go

	hook stepHook // multirank.go: the collective at the end of each step, nil for one rank
}

// Generate writes a synthetic nsys export of the run cfg describes to
// path, and its ground truth to TruthPath(path). It refuses to replace
// existing files unless cfg.Overwrite is set. The trace is written to a
// temporary file beside path and renamed into place when complete.
func Generate(path string, cfg Config) (*Truth, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	truthPath := TruthPath(path)
	if !cfg.Overwrite {
		for _, p := range []string{path, truthPath} {
			if _, err := os.Stat(p); err == nil {
				return nil, fmt.Errorf("%w: %s", fs.ErrExist, p)
			}
		}
	}
	tmpName, discard, err := outfile.Reserve(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("creating temporary file: %w", err)
	}
	ok := false
	defer discard(&ok)
	truth, err := generate(tmpName, cfg, nil)
	if err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(truth, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding ground truth: %w", err)
	}
	if err := os.WriteFile(truthPath, append(js, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing ground truth: %w", err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return nil, fmt.Errorf("renaming trace into place: %w", err)
	}
	ok = true
	return truth, nil
}

func generate(path string, cfg Config, hook stepHook) (*Truth, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_txlock=exclusive")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer conn.Close()
	for _, p := range []string{
		"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", "PRAGMA locking_mode=EXCLUSIVE",
		"PRAGMA cache_size=-65536", "PRAGMA temp_store=MEMORY",
	} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return nil, fmt.Errorf("setting %s: %w", p, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	if _, err := conn.ExecContext(ctx, baseSQL); err != nil {
		return nil, fmt.Errorf("creating tables: %w", err)
	}
	g := newGen(ctx, conn, cfg)
	g.hook = hook
	if err := g.run(); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return nil, fmt.Errorf("committing: %w", err)
	}
	if err := conn.Close(); err != nil {
		return nil, fmt.Errorf("closing %s: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("closing %s: %w", path, err)
	}
	return g.truth, nil
}

func newGen(ctx context.Context, conn *sql.Conn, cfg Config) *gen {
	g := &gen{
		cfg:    cfg,
		rng:    rng{rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x756d7472616365))},
		export: newExport(ctx, conn),
		names:  map[string]int64{},
		host:   make([]int64, cfg.Threads),
	}
	g.stream = make([]int64, cfg.Streams)
	// The shape's state, with its own random stream.
	sh := cfg.Shape
	g.srng = rand.New(rand.NewPCG(cfg.Seed^0x7368617065, cfg.Seed+0x9e3779b97f4a7c15))
	g.procs = newProcs(max(1, sh.Processes))
	if sh.KernelNames > 0 {
		g.nameIDs = make([]int64, 2*sh.KernelNames)
	}
	if sh.Shuffle {
		for i, t := range g.tables {
			t.shuffle = rand.New(rand.NewPCG(cfg.Seed, uint64(i)+0x73687566))
		}
	}
	g.str("[Unknown]")
	for _, n := range []string{
		"cuKernelGetName", "cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020", "cudaMemcpy_v3020",
		"cudaFree_v3020", "cudaMemsetAsync_v3020", "cudaMemPrefetchAsync_v12020", "cudaMallocManaged_v6000",
		"cudaStreamCreate_v3020", "cuInit", "cuModuleGetLoadingMode", "cudaDeviceSynchronize_v3020",
	} {
		g.names[n] = g.str(n)
	}
	g.names["cpuInstr"] = g.str("0x7f14e23a19d2")
	g.names["cpuModule"] = g.str("/usr/lib/x86_64-linux-gnu/libc.so.6")
	g.names["emptyStr"] = g.str("")
	for _, k := range append(slices.Clone(kernelCatalog), longKernelDef, tinyKernelDef) {
		k.idDem = g.str(k.demangled)
		k.idShort = g.str(k.short)
		k.id = g.str("_Z" + strconv.Itoa(len(k.short)) + k.short + "v")
		g.kernels = append(g.kernels, k)
	}
	g.kernelBase = make([]int64, cfg.KernelsPerStep)
	for j := range g.kernelBase {
		// Log-normal around KernelNs, clamped to [KernelNs/8, 8*KernelNs].
		f := math.Exp(g.rng.NormFloat64() * 0.6)
		f = min(max(f, 0.125), 8)
		g.kernelBase[j] = int64(float64(cfg.KernelNs) * f)
	}
	g.truth = &Truth{
		Generator: "umtrace synth v1",
		Seed:      cfg.Seed,
		Config:    cfg,
		Verdict:   "no_storm",
		Episodes:  []Span{},
		Decoys:    []Span{},
		Rows:      map[string]int64{},
	}
	if cfg.Episodes > 0 {
		g.truth.Verdict = "storm"
	}
	return g
}

// api records a CUDA runtime (or driver, class 1) call and returns its
// correlation id.
func (g *gen) api(tid int, name string, class, start, end int64) int64 {
	g.corr++
	g.runtime.add(start, end, class, g.gtid(tid), g.corr, g.names[name], 0, null)
	return g.corr
}

// layout places episodes and decoys over the steps and returns the kind
// of every step and, per step, the index of its block (-1 for none).
func (g *gen) layout() ([]stepKind, []int) {
	cfg := g.cfg
	type block struct {
		kind stepKind
		len  int
	}
	var blocks []block
	for range cfg.Episodes {
		blocks = append(blocks, block{kindStorm, cfg.EpisodeSteps})
	}
	for range cfg.LongKernelDecoys {
		blocks = append(blocks, block{kindLongKernel, cfg.DecoySteps})
	}
	for range cfg.PrefetchDecoys {
		blocks = append(blocks, block{kindPrefetch, cfg.DecoySteps})
	}
	for range cfg.SyncBurstDecoys {
		blocks = append(blocks, block{kindSyncBurst, cfg.DecoySteps})
	}
	g.rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	kinds := make([]stepKind, cfg.Steps)
	owner := make([]int, cfg.Steps)
	for i := range owner {
		owner[i] = -1
	}
	used := 0
	for _, b := range blocks {
		used += b.len
	}
	// Spread the free steps over len(blocks)+1 gaps of at least minGap,
	// with the extra distributed at random.
	gaps := make([]int, len(blocks)+1)
	free := cfg.Steps - used - minGap*len(gaps)
	for i := range gaps {
		gaps[i] = minGap
	}
	for free > 0 {
		// Distribute in chunks so this stays cheap for huge runs.
		chunk := max(1, free/(2*len(gaps)))
		gaps[g.rng.IntN(len(gaps))] += chunk
		free -= chunk
	}
	s := gaps[0]
	for bi, b := range blocks {
		for k := range b.len {
			kinds[s+k] = b.kind
			owner[s+k] = bi
		}
		s += b.len + gaps[bi+1]
	}
	return kinds, owner
}

func (g *gen) run() error {
	cfg := g.cfg
	kinds, owner := g.layout()

	// Setup: driver init, the managed pool, the streams.
	t := int64(350_000_000) + g.rng.between(0, 20_000_000)
	traceStart := t
	g.api(0, "cuModuleGetLoadingMode", 1, t, t+g.rng.between(800, 1200))
	t += g.rng.between(100_000, 200_000)
	end := t + g.rng.between(100_000_000, 150_000_000)
	c := g.api(0, "cudaMallocManaged_v6000", 0, t, end)
	mu := end - g.rng.between(10_000, 20_000)
	t = end + g.rng.between(2000, 5000)
	t = g.setup(traceStart, t, mu, c)
	for range cfg.Streams {
		end := t + g.rng.between(200_000, 300_000)
		g.api(0, "cudaStreamCreate_v3020", 0, t, end)
		t = end + g.rng.between(2000, 5000)
	}
	for i := range g.host {
		g.host[i] = t
	}
	for i := range g.stream {
		g.stream[i] = t
	}

	var (
		cur      *Span
		curBlock = -1
		spans    []*Span
		// Step boundaries, for the truth's edge windows.
		stepStart = make([]int64, cfg.Steps)
		stepEnd   = make([]int64, cfg.Steps)
	)
	for i := 0; i < cfg.Steps; i++ {
		g.setProc(i)
		slowdown := 1.0
		if kinds[i] == kindStorm {
			if owner[i] != curBlock {
				slowdown = math.Round((cfg.SlowdownMin+g.rng.Float64()*(cfg.SlowdownMax-cfg.SlowdownMin))*100) / 100
			} else {
				slowdown = cur.Slowdown
			}
		}
		st := &stepStats{}
		start, end := g.step(i, kinds[i], slowdown, st)
		stepStart[i], stepEnd[i] = start, end
		if owner[i] != curBlock {
			cur = nil
			if owner[i] >= 0 {
				cur = &Span{Kind: kindNames[kinds[i]], FirstStep: i, StartNs: start}
				if kinds[i] == kindStorm {
					cur.Slowdown = slowdown
				}
				spans = append(spans, cur)
			}
			curBlock = owner[i]
		}
		if cur != nil {
			cur.LastStep = i
			cur.EndNs = end
			cur.GPUFaults += st.gpuFaults
			cur.CPUFaults += st.cpuFaults
			cur.HtoDBytes += st.htod
			cur.DtoHBytes += st.dtoh
			cur.Syncs += st.syncs
		} else {
			g.stepDur = append(g.stepDur, end-start)
		}
		// Everything generated later starts at or after the next step.
		if err := g.flush(g.host[0]); err != nil {
			return err
		}
	}
	last := cfg.Steps - 1
	for _, s := range spans {
		f, l := s.FirstStep, s.LastStep
		s.StartWindowNs = [2]int64{stepStart[max(f-1, 0)], stepStart[min(f+1, last)]}
		s.EndWindowNs = [2]int64{stepEnd[max(l-1, 0)], stepEnd[min(l+1, last)]}
	}
	traceEnd := g.host[0]
	for _, s := range g.stream {
		traceEnd = max(traceEnd, s)
	}
	traceEnd = max(traceEnd, g.copyEn)
	for _, s := range spans {
		if s.Kind == "storm" {
			g.truth.Episodes = append(g.truth.Episodes, *s)
		} else {
			g.truth.Decoys = append(g.truth.Decoys, *s)
		}
	}
	if len(g.stepDur) > 0 {
		d := slices.Clone(g.stepDur)
		slices.Sort(d)
		g.truth.MedianStepNs = d[len(d)/2]
	}
	g.truth.TraceStartNs, g.truth.TraceEndNs = traceStart, traceEnd
	for _, tb := range g.tables {
		if err := tb.close(g.ctx, g.conn); err != nil {
			return err
		}
	}
	return g.finish(traceStart, traceEnd)
}

// stepStats counts what one step planted.
type stepStats struct {
	gpuFaults, cpuFaults, htod, dtoh, syncs int64
}

// step generates step i and returns its NVTX range.
func (g *gen) step(i int, kind stepKind, slowdown float64, st *stepStats) (start, end int64) {
	cfg := g.cfg
	start = g.host[0]
	for t := 1; t < len(g.host); t++ {
		g.host[t] = max(g.host[t], start+g.rng.between(5_000, 30_000))
	}
	h := start + g.rng.between(2_000, 6_000)

	// Zero the gradients.
	e := h + g.rng.between(4_000, 8_000)
	c := g.api(g.tid(0), "cudaMemsetAsync_v3020", 0, h, e)
	ms := max(g.stream[0], h+3_000) + g.rng.between(1_000, 2_000)
	me := ms + g.rng.between(3_000, 6_000)
	g.memset.add(ms, me, deviceID, contextID, 0, firstStrm, c, g.gp, 0, 4<<20, null, 2)
	g.stream[0] = me
	h = e + g.rng.between(1_000, 3_000)

	if cfg.MemcpyEvery > 0 && i%cfg.MemcpyEvery == 0 {
		h = g.syncMemcpy(h, 1, 8<<20)
	}
	if kind == kindPrefetch {
		h = g.prefetches(h, true, st)
	}
	g.host[0] = h
	h = g.stepKernels(kind, slowdown, st)

	if kind == kindSyncBurst {
		for range cfg.SyncBurstSize {
			g.host[0] = h
			g.launch(0, 0, g.kernels[len(kernelCatalog)+1], g.rng.between(2_000, 6_000))
			h = g.streamSync(g.host[0]+g.rng.between(500, 2_000), 0)
			st.syncs++
			h += g.rng.between(5_000, 15_000)
		}
	}
	if kind == kindStorm {
		h = g.cpuFaults(h, st)
	}
	if kind == kindPrefetch {
		h = g.prefetches(h, false, st)
		// The host waits for the prefetches before reading: one more
		// normal-looking sync.
		h = g.streamSync(h, 0)
		st.syncs++
	}
	if cfg.MemcpyEvery > 0 && i%cfg.MemcpyEvery == cfg.MemcpyEvery/2 {
		h = g.syncMemcpy(h, 2, 4)
	}
	if cfg.FreeEvery > 0 && i%cfg.FreeEvery == cfg.FreeEvery-1 {
		e := h + g.rng.between(20_000, 60_000)
		for _, s := range g.stream {
			e = max(e, s+g.rng.between(10_000, 30_000))
		}
		g.api(g.tid(0), "cudaFree_v3020", 0, h, e)
		h = e + g.rng.between(1_000, 3_000)
	}
	if g.hook != nil {
		h = g.hook(g, i, h)
	}
	end = h + g.rng.between(2_000, 10_000)
	g.nvtx.addText("train_step "+strconv.Itoa(i), start, end, 59, null, null, null, 0, g.gtid(g.tid(0)), null, null, 0, null, null, null, null, null, null, null, null, null)
	g.host[0] = end + g.rng.between(10_000, 50_000)
	return start, end
}

// stepKernels launches a step's kernels round-robin over threads and
// streams; the main thread then joins the workers and syncs the stream
// that finishes last. It returns the host time after the sync.
func (g *gen) stepKernels(kind stepKind, slowdown float64, st *stepStats) int64 {
	cfg := g.cfg
	for j := range cfg.KernelsPerStep {
		t, s := j%cfg.Threads, j%cfg.Streams
		k := g.kernels[j%len(kernelCatalog)]
		if g.cfg.Shape.KernelNames > 0 {
			k = g.diverseKernel(k)
		}
		dur := int64(float64(g.kernelBase[j]) * (0.95 + 0.1*g.rng.Float64()))
		switch {
		case kind == kindStorm:
			dur = int64(float64(dur) * slowdown * (0.9 + 0.2*g.rng.Float64()))
		case kind == kindLongKernel && j == cfg.KernelsPerStep-1:
			k = g.kernels[len(kernelCatalog)]
			// As long as a whole storm step's GPU time.
			var sum int64
			for _, b := range g.kernelBase {
				sum += b
			}
			f := (cfg.SlowdownMin + cfg.SlowdownMax) / 2
			dur = int64(float64(sum) / float64(cfg.Streams) * max(f, 3) * (0.9 + 0.2*g.rng.Float64()))
		}
		hs := g.host[t]
		ks, _ := g.launch(t, s, k, dur)
		g.kernelRanges(t, hs, g.host[t])
		if kind == kindStorm {
			g.faultsDuring(ks, ks+dur, st)
		}
	}

	// The main thread joins the workers, then syncs the stream that
	// finishes last.
	h := g.host[0]
	for _, ht := range g.host[1:] {
		h = max(h, ht)
	}
	h += g.rng.between(2_000, 6_000)
	last := 0
	for s := range g.stream {
		if g.stream[s] > g.stream[last] {
			last = s
		}
	}
	if g.cfg.Shape.DeviceSync {
		h = g.deviceSync(h)
	} else {
		h = g.streamSync(h, last)
	}
	st.syncs++
	return h
}

// prefetches issues the prefetches of a prefetching step from host time
// h: to the device before the kernels (in; stream-ordered, so kernels on
// stream 0 wait) or back to the host after them. It returns the host time
// after them.
func (g *gen) prefetches(h int64, in bool, st *stepStats) int64 {
	n, kind := prefetchesOut, int64(12)
	if in {
		n, kind = prefetchesIn, 11
	}
	for range n {
		e := h + g.rng.between(15_000, 40_000)
		g.api(g.tid(0), "cudaMemPrefetchAsync_v12020", 0, h, e)
		addr := g.addr()
		g.page += prefetchBytes / pageBytes
		ready := max(g.copyEn, h+10_000)
		if in {
			ready = max(ready, g.stream[0])
		}
		ms := ready + g.rng.between(1_000, 4_000)
		me := ms + g.rng.between(38_000, 45_000)
		g.migration(ms, me, prefetchBytes, kind, 1, addr)
		g.copyEn = me
		g.stream[0] = max(g.stream[0], me)
		if in {
			st.htod += prefetchBytes
		} else {
			st.dtoh += prefetchBytes
		}
		h = e + g.rng.between(1_000, 3_000)
	}
	return h
}

// launch issues cuKernelGetName and cudaLaunchKernel on host thread t and
// runs kernel k for dur ns on stream s; it returns the kernel's interval.
func (g *gen) launch(t, s int, k kernelDef, dur int64) (int64, int64) {
	h := g.host[t]
	e := h + g.rng.between(400, 1_000)
	g.api(g.tid(t), "cuKernelGetName", 1, h, e)
	h = e + g.rng.between(200, 600)
	e = h + g.rng.between(4_000, 12_000)
	c := g.api(g.tid(t), "cudaLaunchKernel_v7000", 0, h, e)
	ks := max(g.stream[s]+g.rng.between(1_000, 3_000), h+g.rng.between(2_000, 5_000))
	ke := ks + dur
	g.gridID++
	g.kernel.add(ks, ke, deviceID, contextID, 0, int64(firstStrm+s), c, g.gp,
		k.idDem, k.idShort, k.id, 1, 1, k.regs, k.grid, 1, 1, k.block, 1, 1,
		0, k.dynShared, 0, 155713536, g.gridID, 32768, null, 0)
	g.stream[s] = ke
	g.host[t] = e + g.rng.between(3_000, 20_000)
	return ks, ke
}

// streamSync calls cudaStreamSynchronize on stream s at host time h and
// returns the time the call returns: just after the stream's last op.
func (g *gen) streamSync(h int64, s int) int64 {
	e := max(h+g.rng.between(2_000, 4_000), g.stream[s]+g.rng.between(3_000, 8_000))
	c := g.api(g.tid(0), "cudaStreamSynchronize_v3020", 0, h, e)
	g.sync.add(h+g.rng.between(1_000, 1_800), e-g.rng.between(800, 1_500), deviceID, contextID, null, int64(firstStrm+s), c, g.gp, null, 2, invalidID, invalidID)
	return e + g.rng.between(500, 2_000)
}

// syncMemcpy issues a synchronous cudaMemcpy of kind 1 (HtoD) or 2 (DtoH)
// on the legacy default stream: it waits for every stream.
func (g *gen) syncMemcpy(h int64, kind int64, bytes int64) int64 {
	cs := h + g.rng.between(4_000, 8_000)
	for _, s := range g.stream {
		cs = max(cs, s+g.rng.between(1_000, 2_000))
	}
	ce := cs + bytes/10 + g.rng.between(1_500, 3_000) // about 10 GB/s
	e := ce + g.rng.between(3_000, 6_000)
	c := g.api(g.tid(0), "cudaMemcpy_v3020", 0, h, e)
	src, dst := int64(0), int64(2)
	if kind == 2 {
		src, dst = 2, 0
	}
	g.memcpy.add(cs, ce, deviceID, contextID, 0, nullStream, c, g.gp, bytes, kind, null, src, dst, null, null, null, null, null, null, null, 1)
	for s := range g.stream {
		g.stream[s] = ce
	}
	return e + g.rng.between(1_000, 3_000)
}

// migration records a UM migration row.
func (g *gen) migration(start, end, bytes, kind, cause, addr int64) {
	g.memcpy.add(start, end, deviceID, 0, null, 0, 0, g.gp, bytes, kind, null, 7, 7, null, null, null, null, cause, null, addr, null)
}

// faultsDuring plants GPU fault groups and their HtoD migrations inside
// the kernel [ks, ke).
func (g *gen) faultsDuring(ks, ke int64, st *stepStats) {
	n := int64(g.cfg.FaultGroupsPerKernel)
	if n == 0 {
		return
	}
	dur := ke - ks
	slot := dur / n
	for k := range n {
		fs := ks + k*slot + g.rng.between(0, slot/4)
		fe := min(fs+max(slot/2, 2_000)+g.rng.between(0, slot/4), ke-1)
		fe = max(fe, fs+1)
		addr := g.addr()
		nf := g.rng.between(1, 4)
		g.gpuFault.add(fs, fe, g.gp, deviceID, addr, nf, g.rng.between(1, 2))
		st.gpuFaults += nf
		m := g.rng.between(2, 5)
		t := max(fs+g.rng.between(2_000, 4_000), g.copyEn+1)
		for x := range m {
			cause, bytes := int64(2), pageBytes*g.rng.between(1, 8)
			if x%2 == 1 {
				cause, bytes = 3, pageBytes*(int64(1)<<g.rng.between(0, 7))
			}
			a := g.addr()
			d := 1_500 + bytes/16 // about 16 GB/s
			g.migration(t, t+d, bytes, 11, cause, a)
			g.page += bytes / pageBytes
			st.htod += bytes
			t += d + 1
		}
		g.copyEn = t
	}
}

// cpuFaults plants the host touching migrated pages after the sync at h:
// CPU faults with DtoH migrations. It returns when the host is done.
func (g *gen) cpuFaults(h int64, st *stepStats) int64 {
	t := h + g.rng.between(5_000, 15_000)
	back := int64(g.cfg.CPUFaultsPerStep) * 16 // pages to walk back over
	for c := range g.cfg.CPUFaultsPerStep {
		p := g.page - back + int64(c)*16
		addr := managedBase + (((p%(managedBytes/pageBytes))+managedBytes/pageBytes)%(managedBytes/pageBytes))*pageBytes
		if g.cfg.Shape.RandomPages {
			addr = g.addr()
		}
		g.cpuFault.add(t, g.gp, addr, 139727671531986, g.names["cpuInstr"], g.names["cpuModule"], 1, g.names["emptyStr"], 0)
		st.cpuFaults++
		ms := max(t+g.rng.between(6_000, 10_000), g.copyEn+1)
		me := ms + g.rng.between(1_500, 2_000)
		g.migration(ms, me, pageBytes, 12, 2, addr)
		st.dtoh += pageBytes
		if c%4 == 3 {
			b := pageBytes * (int64(4) << g.rng.between(0, 6))
			ss := me + 1
			se := ss + 1_500 + b/16
			g.migration(ss, se, b, 12, 3, addr+pageBytes)
			st.dtoh += b
			me = se
		}
		g.copyEn = me
		t = me + g.rng.between(2_000, 8_000)
	}
	return t
}

// finish writes the small tables, drops empty lazy tables and counts rows.
func (g *gen) finish(traceStart, traceEnd int64) error {
	ctx, conn := g.ctx, g.conn
	exec := func(q string, args ...any) error {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("writing %.40s: %w", q, err)
		}
		return nil
	}
	if err := exec("INSERT INTO "+schema.AnalysisDetails+" VALUES (?,?,?,?)", vmID, traceEnd-traceStart, traceStart, traceEnd); err != nil {
		return err
	}
	for p := range g.processes() {
		g.setProcess(p)
		if err := g.finishProcess(exec); err != nil {
			return err
		}
	}
	counts, err := g.finishTables(exec)
	if err != nil {
		return err
	}
	g.truth.Rows = counts
	for _, c := range counts {
		g.truth.TotalRows += c
	}
	return nil
}

// finishProcess writes the current process's rows of the small tables.
func (g *gen) finishProcess(exec func(q string, args ...any) error) error {
	pid := g.procPid
	if err := exec("INSERT INTO "+schema.Processes+" VALUES (?,?,?)", g.gp, pid, "python3"); err != nil {
		return err
	}
	if err := exec("INSERT INTO "+schema.CUDADevice+" VALUES (0,0,?)", pid); err != nil {
		return err
	}
	if err := exec("INSERT INTO "+schema.CUDAContextInfo+" VALUES (?,0,1,?,0,1,0,0)", nullStream, pid); err != nil {
		return err
	}
	if err := exec("INSERT INTO "+schema.CUDAStream+" VALUES (?,0,1,?,1,0,3)", nullStream, pid); err != nil {
		return err
	}
	for s := range g.cfg.Streams {
		if err := exec("INSERT INTO "+schema.CUDAStream+" VALUES (?,0,1,?,1,0,1)", firstStrm+s, pid); err != nil {
			return err
		}
	}
	threads := []struct {
		name string
		prio int
		tid  int
	}{{"python3", 20, pid}}
	for t := 1; t < g.cfg.Threads; t++ {
		threads = append(threads, struct {
			name string
			prio int
			tid  int
		}{"pt_autograd_" + strconv.Itoa(t-1), 20, pid + t})
	}
	for _, x := range []struct {
		name string
		tid  int
	}{{"cuda-EvtHandlr", 100}, {"CUPTI worker thread", 101}, {"[NSys]", 102}} {
		threads = append(threads, struct {
			name string
			prio int
			tid  int
		}{x.name, 10, pid + x.tid})
	}
	for _, th := range threads {
		if err := exec("INSERT INTO "+schema.ThreadNames.Name+" VALUES (?,?,?)", g.str(th.name), th.prio, g.gtid(th.tid)); err != nil {
			return err
		}
	}
	return nil
}
