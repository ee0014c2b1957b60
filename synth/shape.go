package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Shape makes a generated trace look like a real export rather than a
// tidy benchmark: many allocations touched at random pages, rows not in
// time order, several processes whose correlation ids overlap, millions
// of distinct long C++ kernel and NVTX names, device-wide syncs. The zero
// Shape is the plain generator (one process, one 8 GiB managed pool
// walked page after page, eight kernel names, rows in start order).
//
// Shapes draw from their own random stream, so the zero Shape gives the
// same trace as before shapes existed.
type Shape struct {
	// Name is the preset the shape came from (Shapes), for the truth file.
	Name string `json:"name,omitempty"`
	// Processes is the number of processes (0 or 1: one). Steps go to them
	// round-robin; each has its own pid, threads, start-up call and
	// correlation ids, which therefore overlap between processes.
	Processes int `json:"processes,omitempty"`
	// Allocations is the number of managed allocations, with sizes
	// log-uniform in [AllocMinBytes, AllocMaxBytes] (0: one 8 GiB pool).
	Allocations   int   `json:"allocations,omitempty"`
	AllocMinBytes int64 `json:"alloc_min_bytes,omitempty"`
	AllocMaxBytes int64 `json:"alloc_max_bytes,omitempty"`
	// RandomPages makes every fault and migration touch a random page
	// (PageBytes, 4096 or 65536) of a random allocation instead of walking
	// the pool: up to millions of distinct addresses.
	RandomPages bool  `json:"random_pages,omitempty"`
	PageBytes   int64 `json:"page_bytes,omitempty"`
	// NoAllocRecords leaves CUDA_GPU_MEMORY_USAGE_EVENTS empty, as nsys
	// does without --cuda-memory-usage=true.
	NoAllocRecords bool `json:"no_alloc_records,omitempty"`
	// Shuffle writes each table's rows in random order within windows of
	// ShuffleRows rows instead of in start order.
	Shuffle bool `json:"shuffle,omitempty"`
	// KernelNames is the number of distinct kernel names (C++ template
	// instances of 200+ bytes), used in turn by successive launches (0: the
	// eight of the catalog).
	KernelNames int `json:"kernel_names,omitempty"`
	// NVTXPerKernel puts that many NVTX ranges around each kernel launch of
	// a step, named in turn from NVTXNames distinct long names.
	NVTXPerKernel int `json:"nvtx_per_kernel,omitempty"`
	NVTXNames     int `json:"nvtx_names,omitempty"`
	// DeviceSync makes the sync at the end of each step a
	// cudaDeviceSynchronize, which leaves no SYNCHRONIZATION row.
	DeviceSync bool `json:"device_sync,omitempty"`
}

// ShuffleRows is the window within which Shape.Shuffle mixes rows.
const ShuffleRows = 1 << 16

// Shapes are the named presets of WithShape, in the order the benchmark
// runs them.
var Shapes = []string{"easy", "address-diverse", "name-diverse", "mild"}

// WithShape returns c changed to the named preset (Shapes):
//
//   - easy: c unchanged (one process, few addresses and names, rows in
//     time order).
//   - address-diverse: 4 processes, 4096 allocations of 64 KiB-256 MiB
//     without memory-usage records, every fault on a random 4 KiB page,
//     rows shuffled, 16 streams and 8 threads.
//   - name-diverse: 2M distinct kernel names and an NVTX range with one of
//     200k distinct names around every launch, rows shuffled, 8 streams
//     and 4 threads.
//   - mild: mild storms under device-wide syncs (cudaDeviceSynchronize, no
//     SYNCHRONIZATION rows): kernels slow down 2-3x, one fault group per
//     kernel, 8 CPU faults per storm step.
func WithShape(c Config, name string) (Config, error) {
	switch name {
	case "easy":
	case "address-diverse":
		c.Shape = Shape{Processes: 4, Allocations: 4096, AllocMinBytes: 64 << 10, AllocMaxBytes: 256 << 20,
			RandomPages: true, PageBytes: 4096, NoAllocRecords: true, Shuffle: true}
		c.Streams, c.Threads = 16, 8
	case "name-diverse":
		c.Shape = Shape{KernelNames: 2_000_000, NVTXPerKernel: 1, NVTXNames: 200_000, Shuffle: true}
		c.Streams, c.Threads = 8, 4
	case "mild":
		c.Shape = Shape{DeviceSync: true}
		c.SlowdownMin, c.SlowdownMax = 2, 3
		c.FaultGroupsPerKernel, c.CPUFaultsPerStep = 1, 8
	default:
		return c, fmt.Errorf("unknown shape %q (want one of %v)", name, Shapes)
	}
	c.Shape.Name = name
	return c, nil
}

// validate reports the first invalid field of s.
func (s Shape) validate() error {
	switch {
	case s.Processes < 0 || s.Processes > 64:
		return fmt.Errorf("processes must be in 0..64, got %d", s.Processes)
	case s.Allocations < 0 || s.Allocations > 1<<20:
		return fmt.Errorf("allocations must be in 0..%d, got %d", 1<<20, s.Allocations)
	case s.Allocations > 0 && (s.AllocMinBytes < pageBytes || s.AllocMaxBytes < s.AllocMinBytes || s.AllocMaxBytes > 1<<40):
		return fmt.Errorf("need 4096 <= alloc min <= alloc max <= 1 TiB, got %d and %d", s.AllocMinBytes, s.AllocMaxBytes)
	case s.PageBytes != 0 && s.PageBytes != 4096 && s.PageBytes != 65536:
		return fmt.Errorf("page bytes must be 4096 or 65536, got %d", s.PageBytes)
	case s.KernelNames < 0 || s.KernelNames > 1<<25:
		return fmt.Errorf("kernel names must be in 0..%d, got %d", 1<<25, s.KernelNames)
	case s.NVTXPerKernel < 0 || s.NVTXPerKernel > 8:
		return fmt.Errorf("NVTX ranges per kernel must be in 0..8, got %d", s.NVTXPerKernel)
	case s.NVTXPerKernel > 0 && (s.NVTXNames < 1 || s.NVTXNames > 1<<25):
		return fmt.Errorf("NVTX names must be in 1..%d, got %d", 1<<25, s.NVTXNames)
	}
	return nil
}

// shapeState is the generator's state for its Shape.
type shapeState struct {
	srng    *rand.Rand // the shape's own random stream
	allocs  []allocation
	nameSeq int     // launches named so far (KernelNames)
	nameIDs []int64 // StringIds of kernel name n: demangled, mangled (0: not yet)
	nvtxSeq int
}

type allocation struct{ base, bytes int64 }

// procs is the process the generator writes rows of (Shape.Processes
// take turns by step), and each one's correlation ids.
type procs struct {
	n       int // processes
	proc    int // current process
	procPid int
	gp      int64   // current process's globalPid
	corr    int64   // last correlation id of the current process
	corrs   []int64 // next correlation id per process
}

func newProcs(n int) procs {
	return procs{n: n, procPid: pid, gp: globalPid, corrs: make([]int64, n)}
}

func (p *procs) processes() int { return p.n }

// gtid is the globalTid of thread tid of the current process.
func (p *procs) gtid(tid int) int64 { return p.gp | int64(tid) }

// tid is the thread id of the current process's thread t.
func (p *procs) tid(t int) int { return p.procPid + t }

// setProc switches to the process that runs step i.
func (p *procs) setProc(i int) {
	if p.n > 1 {
		p.setProcess(i % p.n)
	}
}

func (p *procs) setProcess(i int) {
	p.corrs[p.proc] = p.corr
	p.proc, p.corr = i, p.corrs[i]
	p.procPid = pid + 1000*i
	p.gp = vmID | int64(p.procPid)<<24
}

// setup finishes the start of the run after the first cudaMallocManaged
// (correlation id c, its memory-usage record at mu): the memory-usage row,
// further allocations, and the other processes' start-up. It returns the
// host time after it.
func (g *gen) setup(traceStart, t, mu, c int64) int64 {
	s := g.cfg.Shape
	if s.Allocations == 0 {
		if !s.NoAllocRecords {
			g.allocRecord(mu, managedBase, managedBytes, c)
		}
	} else {
		lo, hi := math.Log(float64(s.AllocMinBytes)), math.Log(float64(s.AllocMaxBytes))
		base := managedBase
		for k := range s.Allocations {
			bytes := int64(math.Exp(lo+g.srng.Float64()*(hi-lo))) &^ (pageBytes - 1)
			if k > 0 {
				e := t + 20_000 + g.srng.Int64N(40_000)
				c = g.api(0, "cudaMallocManaged_v6000", 0, t, e)
				mu, t = e-5_000, e+1_000+g.srng.Int64N(2_000)
			}
			if !s.NoAllocRecords {
				g.allocRecord(mu, base, bytes, c)
			}
			g.allocs = append(g.allocs, allocation{base, bytes})
			base += (bytes + 2<<20 - 1) &^ (2<<20 - 1) // 2 MiB aligned, as the driver places them
		}
	}
	// The other processes start up at the same time, each with its own
	// context creation.
	for p := 1; p < g.processes(); p++ {
		g.setProcess(p)
		st := traceStart + g.srng.Int64N(5_000_000)
		g.api(0, "cuModuleGetLoadingMode", 1, st, st+800+g.srng.Int64N(400))
		st += 100_000 + g.srng.Int64N(100_000)
		e := st + 100_000_000 + g.srng.Int64N(50_000_000)
		c := g.api(0, "cudaMallocManaged_v6000", 0, st, e)
		if !s.NoAllocRecords && s.Allocations == 0 {
			g.allocRecord(e-15_000, managedBase, managedBytes, c)
		}
		t = max(t, e+g.srng.Int64N(5_000))
	}
	g.setProcess(0)
	return t
}

func (g *gen) allocRecord(t, addr, bytes, corr int64) {
	g.memUsage.add(t, g.gp, deviceID, contextID, addr, 0, bytes, 4, 0, null, corr, null, null, null, null, null, null, null)
}

// addr is the address of the next touched page.
func (g *gen) addr() int64 {
	s := g.cfg.Shape
	if !s.RandomPages {
		return managedBase + (g.page%(managedBytes/pageBytes))*pageBytes
	}
	page := s.PageBytes
	if page == 0 {
		page = pageBytes
	}
	a := allocation{managedBase, managedBytes}
	if len(g.allocs) > 0 {
		a = g.allocs[g.srng.IntN(len(g.allocs))]
	}
	n := max(a.bytes/page, 1)
	return a.base + g.srng.Int64N(n)*page
}

// diverseKernel returns k renamed to the next of Shape.KernelNames names.
func (g *gen) diverseKernel(k kernelDef) kernelDef {
	n := g.nameSeq % g.cfg.Shape.KernelNames
	g.nameSeq++
	if g.nameIDs[2*n] == 0 {
		// Distinct by construction: append without the interning map,
		// which would hold millions of long keys.
		g.nameIDs[2*n] = int64(len(g.strs))
		g.strs = append(g.strs, kernelName(n))
		g.nameIDs[2*n+1] = int64(len(g.strs))
		g.strs = append(g.strs, "_ZN7synthgen"+strconv.Itoa(len(k.short))+k.short+"ILi"+strconv.Itoa(n)+"EEEvv")
	}
	k.idDem, k.id = g.nameIDs[2*n], g.nameIDs[2*n+1]
	return k
}

// kernelName is the n-th distinct demangled kernel name: a C++ template
// instance of 200+ bytes, as PyTorch, CUTLASS and flash-attention make.
func kernelName(n int) string {
	a := strconv.Itoa(n)
	switch n % 4 {
	case 0:
		return "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, at::detail::Array<char *, 2>, std::integral_constant<int, " + a + ">>(int, T2, T3)"
	case 1:
		return "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4<cutlass::gemm::GemmShape<128, 128, 16>, cutlass::gemm::GemmShape<64, 64, 16>, cutlass::gemm::GemmShape<16, 8, 8>, " + a + ">>(T1::Params)"
	case 2:
		return "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>, at::native::detail::ReduceConfig<" + a + ">>(T3) [with unsigned int vt0 = 4]"
	}
	return "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t>>, false, true, false, false, " + a + ">(Flash_fwd_params)"
}

// nvtxName is the n-th distinct NVTX range name (no step words, so that
// step detection still picks "train_step N").
func nvtxName(n int) string {
	a := strconv.Itoa(n)
	switch n % 3 {
	case 0:
		return "autograd::engine::evaluate_function: torch::autograd::CopySlices<at::Tensor, c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>, std::vector<at::Tensor, std::allocator<at::Tensor>>> layer " + a
	case 1:
		return "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor [model.encoder.layers." + a + ".self_attn.out_proj, c10::ScalarType::BFloat16, c10::MemoryFormat::Contiguous]"
	}
	return "nccl:all_reduce<c10d::ProcessGroupNCCL::WorkNCCL, std::shared_ptr<c10d::Work>, c10::intrusive_ptr<c10d::ReduceOp>> bucket " + a + " [torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook]"
}

// kernelRanges puts Shape.NVTXPerKernel NVTX ranges on host thread t
// around the launch that ran from hs to he.
func (g *gen) kernelRanges(t int, hs, he int64) {
	for range g.cfg.Shape.NVTXPerKernel {
		name := nvtxName(g.nvtxSeq % g.cfg.Shape.NVTXNames)
		g.nvtxSeq++
		g.nvtx.addText(name, hs, max(he-1, hs+1), 59, null, null, null, 0, g.gtid(g.tid(t)), null, null, 0, null, null, null, null, null, null, null, null, null)
	}
}

// deviceSync calls cudaDeviceSynchronize at host time h: it returns after
// every stream's last op and leaves no SYNCHRONIZATION row.
func (g *gen) deviceSync(h int64) int64 {
	e := h + g.rng.between(2_000, 4_000)
	for _, s := range g.stream {
		e = max(e, s+g.rng.between(3_000, 8_000))
	}
	g.api(g.tid(0), "cudaDeviceSynchronize_v3020", 0, h, e)
	return e + g.rng.between(500, 2_000)
}
