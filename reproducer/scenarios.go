package reproducer

/*
#include <stdlib.h>
#include "um.h"
*/
import "C"

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
)

// Scenario is one unified-memory pattern the reproducer can run.
type Scenario struct {
	Name        string
	Description string
	// Storm is the verdict umtrace analyze is expected to give the
	// scenario's trace: true for an implicit-synchronization storm.
	Storm bool
	run   func(g *gpu, r *runner) error
}

// Scenarios lists every scenario, in the order --validate runs them.
var Scenarios = []Scenario{
	{Name: "managed", Storm: true, run: runManaged,
		Description: "default managed memory: a kernel touches every page, then the CPU touches every page (GPU and CPU faults, migrations both ways, long syncs)"},
	{Name: "prefetch", Storm: false, run: runPrefetch,
		Description: "managed memory prefetched to the GPU before the kernel and back to the host before the CPU touch (user prefetches, no faults)"},
	{Name: "advise", Storm: false, run: runAdvise,
		Description: "managed memory advised: preferred location host, accessed by the GPU (the GPU reads the host pages remotely; no faults, no migrations)"},
	{Name: "explicit", Storm: false, run: runExplicit,
		Description: "cuMemAlloc device memory with explicit synchronous copies (no unified memory)"},
	{Name: "pool", Storm: false, run: runPool,
		Description: "stream-ordered allocation from the device's default memory pool (cuMemAllocAsync/cuMemFreeAsync each step)"},
	{Name: "free-in-loop", Storm: true, run: runFreeInLoop,
		Description: "managed memory touched by GPU and CPU each step with no explicit sync: a cuMemAlloc/cuMemFree of scratch memory inside the loop is the implicit device synchronization that stalls on the faults"},
	{Name: "two-streams", Storm: true, run: runTwoStreams,
		Description: "two streams, each with its own managed buffer, CPU touches after each stream's sync (storm on both)"},
	{Name: "race", Storm: false, run: runRace,
		Description: "device memory and a kernel with a planted shared-memory race (for compute-sanitizer racecheck)"},
}

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range append(slices.Clone(Scenarios), OtherScenarios...) {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Names returns the scenario names.
func Names() []string {
	var out []string
	for _, s := range append(slices.Clone(Scenarios), OtherScenarios...) {
		out = append(out, s.Name)
	}
	return out
}

// Options configure one scenario run.
type Options struct {
	Scenario string
	SizeMB   int // managed/device buffer size; 0 means DefaultSizeMB
	Steps    int // 0 means DefaultSteps
	Device   int // CUDA device ordinal
	Log      io.Writer
}

// Defaults and limits for Options.
const (
	DefaultSizeMB = 256
	DefaultSteps  = 10
	MaxSizeMB     = 4096
)

// Result is what a scenario run measured.
type Result struct {
	Scenario string     `json:"scenario"`
	SizeMB   int        `json:"size_mb"`
	Steps    int        `json:"steps"`
	Device   DeviceInfo `json:"device"`
	NVTX     string     `json:"nvtx"`
	StepMs   []float64  `json:"step_ms"`      // per step, CUDA events on the scenario's stream
	WallMs   []float64  `json:"step_wall_ms"` // per step, host clock
	Started  time.Time  `json:"started"`
}

// P50 returns the median of the event-timed steps.
func (r *Result) P50() float64 { return median(r.StepMs) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type runner struct {
	opts   Options
	bytes  uint64
	res    *Result
	stream C.CUstream
	g      *gpu
}

// step times fn as step i: an NVTX range "step i" on the host, CUDA
// events on the main stream around it.
func (r *runner) step(i int, fn func() error) error {
	nvtxPush(fmt.Sprintf("step %d", i))
	defer nvtxPop()
	t0 := time.Now()
	if err := ck("cuEventRecord", C.um_event_record(r.g.events[0], r.stream)); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return fmt.Errorf("step %d: %w", i, err)
	}
	if err := ck("cuEventRecord", C.um_event_record(r.g.events[1], r.stream)); err != nil {
		return err
	}
	if err := ck("cuEventSynchronize", C.um_event_sync(r.g.events[1])); err != nil {
		return err
	}
	var ms C.float
	if err := ck("cuEventElapsedTime", C.um_event_ms(r.g.events[0], r.g.events[1], &ms)); err != nil {
		return err
	}
	r.res.StepMs = append(r.res.StepMs, float64(ms))
	r.res.WallMs = append(r.res.WallMs, float64(time.Since(t0).Microseconds())/1e3)
	return nil
}

func (r *runner) steps(fn func(i int) error) error {
	for i := 0; i < r.opts.Steps; i++ {
		if err := r.step(i, func() error { return fn(i) }); err != nil {
			return err
		}
	}
	return nil
}

// Run runs one scenario on the GPU and returns its step timings. It
// refuses sizes above a quarter of the device's free memory.
func Run(opts Options) (*Result, error) {
	sc, ok := Lookup(opts.Scenario)
	if !ok {
		return nil, fmt.Errorf("unknown scenario %q (have %v)", opts.Scenario, Names())
	}
	if opts.SizeMB == 0 {
		opts.SizeMB = DefaultSizeMB
	}
	if opts.Steps == 0 {
		opts.Steps = DefaultSteps
	}
	if opts.SizeMB < 1 || opts.SizeMB > MaxSizeMB {
		return nil, fmt.Errorf("size %d MB out of range 1..%d", opts.SizeMB, MaxSizeMB)
	}
	if opts.Steps < 1 || opts.Steps > 10000 {
		return nil, fmt.Errorf("steps %d out of range 1..10000", opts.Steps)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// The CUDA context is current to one OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := nvtxInit()
	g, err := openGPU(opts.Device)
	if err != nil {
		return nil, err
	}
	defer g.close()
	bytes := uint64(opts.SizeMB) << 20
	// Scenarios hold at most two buffers of the given size at a time.
	if need := 2 * bytes; need > g.info.FreeBytes/maxManagedFractionFree {
		return nil, fmt.Errorf("size %d MB too large: the scenario needs %d MB and the cap is a quarter of the %d MB free on %s",
			opts.SizeMB, need>>20, g.info.FreeBytes>>20, g.info.Name)
	}
	res := &Result{Scenario: sc.Name, SizeMB: opts.SizeMB, Steps: opts.Steps, Device: g.info, NVTX: mode, Started: time.Now().UTC()}
	r := &runner{opts: opts, bytes: bytes, res: res, g: g}
	var stream C.CUstream
	if err := ck("cuStreamCreate", C.um_stream_create(&stream)); err != nil {
		return nil, err
	}
	r.stream = stream
	defer C.um_stream_destroy(r.stream)
	fmt.Fprintf(opts.Log, "scenario %s: %d MB, %d steps on %s (cc %d.%d, driver %d, %s, nvtx %s)\n",
		sc.Name, opts.SizeMB, opts.Steps, g.info.Name, g.info.ComputeMajor, g.info.ComputeMinor, g.info.DriverVersion, g.info.Kernels, mode)
	if err := sc.run(g, r); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if err := ck("cuCtxSynchronize", C.um_ctx_sync()); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return res, nil
}

func (r *runner) floats() C.ulonglong { return C.ulonglong(r.bytes / 4) }

func (r *runner) touch(s C.CUstream, p C.CUdeviceptr, n C.ulonglong, v float32, reps int) error {
	return ck("cuLaunchKernel touch", C.um_launch_touch(r.g.touch, s, p, n, C.float(v), C.int(reps)))
}

func (r *runner) managed() (C.CUdeviceptr, func(), error) {
	var p C.CUdeviceptr
	if err := ck("cuMemAllocManaged", C.um_alloc_managed(&p, C.size_t(r.bytes))); err != nil {
		return 0, nil, err
	}
	return p, func() { C.um_ctx_sync(); C.um_free(p) }, nil
}

// managedSteps runs a scenario on one managed buffer of the run's size:
// setup on the fresh buffer (when not nil), one host touch of every page,
// then step each step. The buffer is freed after the last step.
func (r *runner) managedSteps(setup func(p C.CUdeviceptr) error, step func(p C.CUdeviceptr, i int) error) error {
	p, free, err := r.managed()
	if err != nil {
		return err
	}
	defer free()
	if setup != nil {
		if err := setup(p); err != nil {
			return err
		}
	}
	C.um_cpu_touch(p, C.size_t(r.bytes))
	return r.steps(func(i int) error { return step(p, i) })
}

// touchAll launches the touch kernel over the whole buffer at p on the
// main stream, with step i's value.
func (r *runner) touchAll(p C.CUdeviceptr, i int) error {
	return r.touch(r.stream, p, r.floats(), float32(i), touchRepsDefault)
}

// syncThenCPUTouch waits for stream s, then touches the n bytes at p from
// the host (on managed memory: CPU faults on the pages the GPU has).
func syncThenCPUTouch(s C.CUstream, p C.CUdeviceptr, n C.size_t) error {
	if err := ck("cuStreamSynchronize", C.um_stream_sync(s)); err != nil {
		return err
	}
	C.um_cpu_touch(p, n)
	return nil
}

// gpuThenCPU is step i of managed and advise: the kernel touches every
// page at p, the main stream is synchronized, the CPU touches every page.
func (r *runner) gpuThenCPU(p C.CUdeviceptr, i int) error {
	if err := r.touchAll(p, i); err != nil {
		return err
	}
	return syncThenCPUTouch(r.stream, p, C.size_t(r.bytes))
}

func runManaged(g *gpu, r *runner) error {
	return r.managedSteps(nil, r.gpuThenCPU)
}

func runPrefetch(g *gpu, r *runner) error {
	n, dev := C.size_t(r.bytes), C.int(r.opts.Device)
	return r.managedSteps(nil, func(p C.CUdeviceptr, i int) error {
		if err := ck("cuMemPrefetchAsync_v2 device", C.um_prefetch(p, n, memLocDevice, dev, r.stream)); err != nil {
			return err
		}
		if err := r.touchAll(p, i); err != nil {
			return err
		}
		if err := ck("cuMemPrefetchAsync_v2 host", C.um_prefetch(p, n, memLocHost, 0, r.stream)); err != nil {
			return err
		}
		return syncThenCPUTouch(r.stream, p, n)
	})
}

func runAdvise(g *gpu, r *runner) error {
	n := C.size_t(r.bytes)
	advise := func(p C.CUdeviceptr) error {
		if err := ck("cuMemAdvise_v2 preferred location host", C.um_advise(p, n, adviseSetPreferredLoc, memLocHost, 0)); err != nil {
			return err
		}
		return ck("cuMemAdvise_v2 accessed by device", C.um_advise(p, n, adviseSetAccessedBy, memLocDevice, C.int(r.opts.Device)))
	}
	return r.managedSteps(advise, r.gpuThenCPU)
}

func runExplicit(g *gpu, r *runner) error {
	var d C.CUdeviceptr
	if err := ck("cuMemAlloc", C.um_alloc(&d, C.size_t(r.bytes))); err != nil {
		return err
	}
	defer C.um_free(d)
	h := C.um_host_alloc(C.size_t(r.bytes))
	if h == nil {
		return fmt.Errorf("host buffer of %d MB: out of memory", r.bytes>>20)
	}
	defer C.free(h)
	return r.steps(func(i int) error {
		if err := ck("cuMemcpyHtoD", C.um_htod(d, h, C.size_t(r.bytes))); err != nil {
			return err
		}
		if err := r.touchAll(d, i); err != nil {
			return err
		}
		if err := ck("cuStreamSynchronize", C.um_stream_sync(r.stream)); err != nil {
			return err
		}
		if err := ck("cuMemcpyDtoH", C.um_dtoh(h, d, C.size_t(r.bytes))); err != nil {
			return err
		}
		C.um_host_touch(h, C.size_t(r.bytes))
		return nil
	})
}

func runPool(g *gpu, r *runner) error {
	h := C.um_host_alloc(C.size_t(r.bytes))
	if h == nil {
		return fmt.Errorf("host buffer of %d MB: out of memory", r.bytes>>20)
	}
	defer C.free(h)
	return r.steps(func(i int) error {
		var d C.CUdeviceptr
		if err := ck("cuMemAllocAsync", C.um_alloc_async(&d, C.size_t(r.bytes), r.stream)); err != nil {
			return err
		}
		if err := r.touchAll(d, i); err != nil {
			return err
		}
		if err := ck("cuMemFreeAsync", C.um_free_async(d, r.stream)); err != nil {
			return err
		}
		if err := ck("cuStreamSynchronize", C.um_stream_sync(r.stream)); err != nil {
			return err
		}
		C.um_host_touch(h, C.size_t(r.bytes))
		return nil
	})
}

func runFreeInLoop(g *gpu, r *runner) error {
	scratch := r.bytes / 16
	return r.managedSteps(nil, func(p C.CUdeviceptr, i int) error {
		var d C.CUdeviceptr
		if err := ck("cuMemAlloc scratch", C.um_alloc(&d, C.size_t(scratch))); err != nil {
			return err
		}
		if err := r.touchAll(p, i); err != nil {
			return err
		}
		if err := r.touch(r.stream, d, C.ulonglong(scratch/4), float32(i), touchRepsDefault); err != nil {
			return err
		}
		// No stream synchronization: cuMemFree waits for the whole device,
		// i.e. for the kernel that is faulting the managed pages over.
		if err := ck("cuMemFree scratch", C.um_free(d)); err != nil {
			return err
		}
		C.um_cpu_touch(p, C.size_t(r.bytes))
		return nil
	})
}

func runTwoStreams(g *gpu, r *runner) error {
	half := r.bytes / 2
	var a, b C.CUdeviceptr
	if err := ck("cuMemAllocManaged", C.um_alloc_managed(&a, C.size_t(half))); err != nil {
		return err
	}
	defer C.um_free(a)
	if err := ck("cuMemAllocManaged", C.um_alloc_managed(&b, C.size_t(half))); err != nil {
		return err
	}
	defer C.um_free(b)
	var s2 C.CUstream
	if err := ck("cuStreamCreate", C.um_stream_create(&s2)); err != nil {
		return err
	}
	defer C.um_stream_destroy(s2)
	C.um_cpu_touch(a, C.size_t(half))
	C.um_cpu_touch(b, C.size_t(half))
	n := C.ulonglong(half / 4)
	err := r.steps(func(i int) error {
		if err := r.touch(r.stream, a, n, float32(i), touchRepsDefault); err != nil {
			return err
		}
		if err := r.touch(s2, b, n, float32(i), touchRepsDefault); err != nil {
			return err
		}
		if err := syncThenCPUTouch(r.stream, a, C.size_t(half)); err != nil {
			return err
		}
		return syncThenCPUTouch(s2, b, C.size_t(half))
	})
	C.um_ctx_sync()
	return err
}

func runRace(g *gpu, r *runner) error {
	out := uint64(raceBlocks * 256 * 4)
	var d C.CUdeviceptr
	if err := ck("cuMemAlloc", C.um_alloc(&d, C.size_t(out))); err != nil {
		return err
	}
	defer C.um_free(d)
	h := C.um_host_alloc(C.size_t(out))
	if h == nil {
		return fmt.Errorf("host buffer: out of memory")
	}
	defer C.free(h)
	return r.steps(func(i int) error {
		if err := ck("cuLaunchKernel race", C.um_launch_race(g.race, r.stream, d, raceBlocks)); err != nil {
			return err
		}
		if err := ck("cuStreamSynchronize", C.um_stream_sync(r.stream)); err != nil {
			return err
		}
		return ck("cuMemcpyDtoH", C.um_dtoh(h, d, C.size_t(out)))
	})
}
