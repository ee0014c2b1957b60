package reproducer

/*
#include <stdlib.h>
#include "um.h"
#include "multi.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Multi-rank scenarios: several processes that step together and meet in a
// collective every step, one of them storming. A launcher starts the ranks
// (cmd/umtrace reproduce); each rank runs RunRank. Ranks meet through files
// in a rendezvous directory: a barrier per step, and the NCCL unique id.

// MultiScenario is one multi-rank scenario.
type MultiScenario struct {
	Name        string
	Description string
	// PerRankTrace: one nsys recording per rank (one process per GPU), else
	// one recording of a parent that starts every rank (one file with N
	// processes).
	PerRankTrace bool
	// Managed: the storming rank uses managed memory with host touches.
	Managed bool
}

// MultiScenarios lists the multi-rank scenarios.
var MultiScenarios = []MultiScenario{
	{Name: "multi-process", Managed: true,
		Description: "N processes on one GPU, each with its own managed buffer; only the storm rank touches its buffer from the host each step; every step ends in a barrier (one trace with N processes)"},
	{Name: "multi-gpu", Managed: true, PerRankTrace: true,
		Description: "one process per GPU (rank r on GPU r mod count), NCCL all-reduce each step when libnccl loads and the ranks have distinct GPUs, else a barrier and a host-staged exchange; managed memory with host touches on the storm rank only (one trace per rank)"},
	{Name: "multi-gpu-control", Managed: false, PerRankTrace: true,
		Description: "multi-gpu with device memory on every rank (no managed memory): the control, no storm"},
}

// LookupMulti returns the multi-rank scenario called name.
func LookupMulti(name string) (MultiScenario, bool) {
	for _, s := range MultiScenarios {
		if s.Name == name {
			return s, true
		}
	}
	return MultiScenario{}, false
}

// RankOptions configure one rank of a multi-rank scenario.
type RankOptions struct {
	Scenario   string
	Rank       int
	Ranks      int
	StormRank  int
	SizeMB     int
	Steps      int
	Device     int    // -1: rank mod device count (multi-gpu) or 0
	Exchange   string // "auto", "nccl" or "host"
	Rendezvous string // directory shared by the ranks
	Log        io.Writer
}

// RankResult is what one rank measured.
type RankResult struct {
	Result
	Rank         int       `json:"rank"`
	Ranks        int       `json:"ranks"`
	StormRank    int       `json:"storm_rank"`
	Exchange     string    `json:"exchange"` // "nccl 2.x.y" or "host barrier"
	CollectiveMs []float64 `json:"collective_ms"`
}

// RankFile is where rank r of a scenario saves its RankResult.
func RankFile(outDir, scenario string, rank int) string {
	return filepath.Join(outDir, fmt.Sprintf("%s.rank%d.steps.json", scenario, rank))
}

// WriteRankResult saves r in outDir.
func WriteRankResult(outDir string, r *RankResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(RankFile(outDir, r.Scenario, r.Rank), append(b, '\n'), 0o644)
}

// ReadRankResult loads what rank r saved.
func ReadRankResult(outDir, scenario string, rank int) (*RankResult, error) {
	b, err := os.ReadFile(RankFile(outDir, scenario, rank))
	if err != nil {
		return nil, err
	}
	var r RankResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// barrier waits until every rank has reached tag.
func barrier(dir, tag string, rank, ranks int) error {
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.%d", tag, rank)), nil, 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for r := 0; r < ranks; r++ {
		p := filepath.Join(dir, fmt.Sprintf("%s.%d", tag, r))
		for {
			if _, err := os.Stat(p); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("barrier %s: rank %d never arrived", tag, r)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}

// ncclCandidates are where libnccl is looked for: $UMTRACE_NCCL, the
// loader path, then the copies pip wheels (PyTorch's nvidia-nccl) install.
func ncclCandidates() []string {
	var c []string
	if p := os.Getenv("UMTRACE_NCCL"); p != "" {
		c = append(c, p)
	}
	c = append(c, "libnccl.so.2", "libnccl.so")
	for _, g := range []string{
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*",
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so*",
		"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so*",
		"/opt/conda/lib/libnccl.so*",
		"/usr/local/cuda*/lib64/libnccl.so*",
	} {
		m, _ := filepath.Glob(g)
		slices.Sort(m)
		c = append(c, m...)
	}
	return c
}

// loadNCCL dlopens the first loadable libnccl and returns its version.
func loadNCCL() (string, error) {
	var tried []string
	for _, p := range ncclCandidates() {
		cp := C.CString(p)
		miss := C.um_nccl_load(cp)
		C.free(unsafe.Pointer(cp))
		if miss == nil {
			var v C.int
			C.um_nccl_version(&v)
			return fmt.Sprintf("nccl %d (%s)", int(v), p), nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("no loadable libnccl (tried %s)", strings.Join(tried, ", "))
}

func ncclCk(what string, r C.int) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", what, C.GoString(C.um_nccl_err(r)), int(r))
}

// deviceCount is the number of CUDA devices.
func deviceCount() (int, error) {
	if err := Available(); err != nil {
		return 0, err
	}
	if err := ck("cuInit", C.CUresult(C.um_probe_init())); err != nil {
		return 0, err
	}
	var n C.int
	if err := ck("cuDeviceGetCount", C.um_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// normalize checks o and fills in its defaults; it returns the scenario
// o names.
func (o *RankOptions) normalize() (MultiScenario, error) {
	sc, ok := LookupMulti(o.Scenario)
	if !ok {
		return sc, fmt.Errorf("unknown multi-rank scenario %q", o.Scenario)
	}
	if o.Ranks < 1 || o.Rank < 0 || o.Rank >= o.Ranks {
		return sc, fmt.Errorf("rank %d of %d", o.Rank, o.Ranks)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.SizeMB <= 0 {
		o.SizeMB = 64
	}
	if o.Steps <= 0 {
		o.Steps = DefaultSteps
	}
	return sc, nil
}

// agreeExchange settles the exchange every rank uses each step: NCCL
// when asked or possible (one GPU per rank), else a host barrier with a
// host-staged copy. Rank 0 decides and publishes it in the rendezvous
// directory; with NCCL it returns the communicator (the caller destroys
// it). It sets res.Exchange.
func agreeExchange(o RankOptions, sc MultiScenario, ndev int, res *RankResult) (useNCCL bool, comm unsafe.Pointer, err error) {
	switch o.Exchange {
	case "nccl":
		useNCCL = true
	case "auto", "":
		useNCCL = sc.PerRankTrace && o.Ranks > 1 && o.Ranks <= ndev
	}
	res.Exchange = "host barrier"
	if useNCCL {
		v, err := loadNCCL()
		if err != nil {
			if o.Exchange == "nccl" {
				return false, nil, err
			}
			useNCCL = false
			fmt.Fprintf(o.Log, "rank %d: %v; using a host barrier\n", o.Rank, err)
		} else {
			res.Exchange = v
		}
	}
	// Everyone agrees on the exchange: rank 0 decides and publishes it.
	if o.Rank == 0 {
		mode := "host"
		if useNCCL {
			id := make([]byte, 128)
			if err := ncclCk("ncclGetUniqueId", C.um_nccl_id(unsafe.Pointer(&id[0]))); err != nil {
				return false, nil, err
			}
			if err := os.WriteFile(filepath.Join(o.Rendezvous, "nccl.id"), id, 0o644); err != nil {
				return false, nil, err
			}
			mode = "nccl"
		}
		tmp := filepath.Join(o.Rendezvous, "exchange.tmp")
		if err := os.WriteFile(tmp, []byte(mode), 0o644); err != nil {
			return false, nil, err
		}
		if err := os.Rename(tmp, filepath.Join(o.Rendezvous, "exchange")); err != nil {
			return false, nil, err
		}
	}
	if err := barrier(o.Rendezvous, "start", o.Rank, o.Ranks); err != nil {
		return false, nil, err
	}
	b, err := os.ReadFile(filepath.Join(o.Rendezvous, "exchange"))
	if err != nil {
		return false, nil, err
	}
	if string(b) == "nccl" && !useNCCL {
		return false, nil, errors.New("rank 0 chose NCCL but this rank cannot load it")
	}
	useNCCL = string(b) == "nccl"
	if !useNCCL {
		res.Exchange = "host barrier"
	}
	if useNCCL {
		id, err := os.ReadFile(filepath.Join(o.Rendezvous, "nccl.id"))
		if err != nil || len(id) != 128 {
			return false, nil, fmt.Errorf("nccl id: %v", err)
		}
		var c unsafe.Pointer
		if err := ncclCk("ncclCommInitRank", C.um_nccl_init(&c, C.int(o.Ranks), unsafe.Pointer(&id[0]), C.int(o.Rank))); err != nil {
			return false, nil, err
		}
		return true, c, nil
	}
	return false, nil, nil
}

// RunRank runs one rank of a multi-rank scenario.
func RunRank(o RankOptions) (*RankResult, error) {
	sc, err := o.normalize()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := nvtxInit()
	ndev, err := deviceCount()
	if err != nil {
		return nil, err
	}
	dev := o.Device
	if dev < 0 {
		dev = 0
		if sc.PerRankTrace {
			dev = o.Rank % ndev
		}
	}
	g, err := openGPU(dev)
	if err != nil {
		return nil, err
	}
	defer g.close()
	bytes := uint64(o.SizeMB) << 20
	// Every rank on the GPU holds its buffer: stay under a quarter of
	// what is free, shared among the ranks that use this GPU.
	share := uint64(max(1, (o.Ranks+ndev-1)/ndev))
	if sc.Name == "multi-process" {
		share = uint64(o.Ranks)
	}
	if need := (bytes + 4<<20) * share; need > g.info.FreeBytes/maxManagedFractionFree {
		return nil, fmt.Errorf("size %d MB too large for %d ranks on %s (%d MB free; cap a quarter)", o.SizeMB, share, g.info.Name, g.info.FreeBytes>>20)
	}
	res := &RankResult{Result: Result{Scenario: sc.Name, SizeMB: o.SizeMB, Steps: o.Steps, Device: g.info, NVTX: mode, Started: time.Now().UTC()},
		Rank: o.Rank, Ranks: o.Ranks, StormRank: o.StormRank}
	r := &runner{opts: Options{Scenario: sc.Name, SizeMB: o.SizeMB, Steps: o.Steps, Device: dev, Log: o.Log}, bytes: bytes, res: &res.Result, g: g}
	var stream C.CUstream
	if err := ck("cuStreamCreate", C.um_stream_create(&stream)); err != nil {
		return nil, err
	}
	r.stream = stream
	defer C.um_stream_destroy(stream)

	useNCCL, comm, err := agreeExchange(o, sc, ndev, res)
	if err != nil {
		return nil, err
	}
	if comm != nil {
		defer C.um_nccl_destroy(comm)
	}
	fmt.Fprintf(o.Log, "rank %d/%d: %s, %d MB, %d steps on GPU %d %s, exchange %s, storm rank %d\n",
		o.Rank, o.Ranks, sc.Name, o.SizeMB, o.Steps, dev, g.info.Name, res.Exchange, o.StormRank)

	storm := sc.Managed && o.Rank == o.StormRank
	// The work buffer: managed memory on every rank of a managed scenario
	// (only the storm rank touches it from the host), device memory in
	// the control.
	var buf C.CUdeviceptr
	if sc.Managed {
		if err := ck("cuMemAllocManaged", C.um_alloc_managed(&buf, C.size_t(bytes))); err != nil {
			return nil, err
		}
		C.um_cpu_touch(buf, C.size_t(bytes))
	} else if err := ck("cuMemAlloc", C.um_alloc(&buf, C.size_t(bytes))); err != nil {
		return nil, err
	}
	defer func() { C.um_ctx_sync(); C.um_free(buf) }()
	const xbytes = 4 << 20
	var xbuf C.CUdeviceptr
	if err := ck("cuMemAlloc exchange", C.um_alloc(&xbuf, xbytes)); err != nil {
		return nil, err
	}
	defer C.um_free(xbuf)
	host := C.um_host_alloc(xbytes)
	if host == nil {
		return nil, errors.New("host exchange buffer: out of memory")
	}
	defer C.free(host)

	// The whole run is an NVTX range naming the rank, so the rank is known
	// from the trace even after umtrace redact drops the environment.
	nvtxPush(fmt.Sprintf("rank %d", o.Rank))
	defer nvtxPop()
	err = r.steps(func(i int) error {
		if err := r.touch(r.stream, buf, r.floats(), float32(i), touchRepsDefault); err != nil {
			return err
		}
		if err := ck("cuStreamSynchronize", C.um_stream_sync(r.stream)); err != nil {
			return err
		}
		if storm {
			C.um_cpu_touch(buf, C.size_t(bytes))
		}
		t0 := time.Now()
		if err := collective(o, i, useNCCL, comm, r.stream, xbuf, host, xbytes); err != nil {
			return err
		}
		res.CollectiveMs = append(res.CollectiveMs, float64(time.Since(t0).Microseconds())/1e3)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := ck("cuCtxSynchronize", C.um_ctx_sync()); err != nil {
		return nil, err
	}
	return res, nil
}

// collective is step i's exchange: an NCCL all-reduce of xbuf, or a host
// barrier and a round trip of xbuf through host.
func collective(o RankOptions, i int, useNCCL bool, comm unsafe.Pointer, stream C.CUstream, xbuf C.CUdeviceptr, host unsafe.Pointer, xbytes C.size_t) error {
	if useNCCL {
		nvtxPush("nccl:all_reduce")
		defer nvtxPop()
		if err := ncclCk("ncclAllReduce", C.um_nccl_allreduce(comm, xbuf, xbytes/4, stream)); err != nil {
			return err
		}
		return ck("cuStreamSynchronize", C.um_stream_sync(stream))
	}
	nvtxPush("barrier")
	defer nvtxPop()
	if err := barrier(o.Rendezvous, fmt.Sprintf("step%d", i), o.Rank, o.Ranks); err != nil {
		return err
	}
	if err := ck("cuMemcpyDtoH exchange", C.um_dtoh(host, xbuf, xbytes)); err != nil {
		return err
	}
	return ck("cuMemcpyHtoD exchange", C.um_htod(xbuf, host, xbytes))
}
