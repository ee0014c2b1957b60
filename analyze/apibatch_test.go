package analyze

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/intern"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/ingesttest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/synth"
)

// smallSynth writes a small synth trace of shape into dir: a few hundred
// steps, hundreds of thousands of rows at most.
func smallSynth(t *testing.T, dir, shape string) string {
	t.Helper()
	cfg := synth.DefaultConfig
	cfg.Seed, cfg.Steps, cfg.KernelsPerStep, cfg.Episodes, cfg.EpisodeSteps, cfg.DecoySteps = 3, 200, 8, 2, 8, 3
	cfg, err := synth.WithShape(cfg, shape)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, shape+".sqlite")
	if _, err := synth.Generate(p, cfg); err != nil {
		t.Fatal(err)
	}
	return p
}

// openInParts opens path for scans in batches of 700 rows and parts of
// 1000: groups and parts cross often.
func openInParts(t *testing.T, path string) *nsys.Reader {
	t.Helper()
	r, err := nsys.Open(path, nsys.Options{BatchRows: 700, ParallelRows: 2000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// apiState is what the API table's consumer leaves in a collector.
type apiState struct {
	Names   []string
	Calls   []callRec
	Procs   map[int64]apiProcState
	Threads map[streamKey]bool
	Graph   []graphLaunch
	First   map[int64]call
}

type apiProcState struct {
	Short   [][]uint16 // by API id
	Wide    [][]uint32
	Long    map[int32][]int64
	Span    span
	Managed int
}

func apiStateOf(c *collector) apiState {
	s := apiState{Calls: c.callBuf.AppendTo(nil), Procs: map[int64]apiProcState{}, Threads: c.threads, Graph: c.graphLaunches, First: map[int64]call{}}
	for id := range c.apiNames.Len() {
		s.Names = append(s.Names, c.apiNames.At(int32(id)))
	}
	for p, pa := range c.apiBy.m {
		ps := apiProcState{Long: pa.long, Span: pa.span, Managed: pa.managed}
		for _, d := range pa.durs {
			ps.Short = append(ps.Short, d.short.AppendTo(nil))
			ps.Wide = append(ps.Wide, d.wide.AppendTo(nil))
		}
		s.Procs[p] = ps
	}
	for p, f := range c.firstRT {
		s.First[p] = *f
	}
	return s
}

// TestPreparedAPI: the API table taken through prepAPI, its batches
// prepared concurrently on the readers' goroutines as collect does
// (ingest.PreparedScanner), leaves the collector exactly as addAPI row by
// row does: ids, the calls in order, each process's durations per API in
// row order, spans, threads, graph launches and first runtime calls.
// Shuffled rows of four processes and 36 threads (address-diverse) and
// real exports (PyTorch, an external one), in small batches and many
// parts, so that both cross groups often.
func TestPreparedAPI(t *testing.T) {
	ad := smallSynth(t, t.TempDir(), "address-diverse")
	paths := []string{ad}
	for _, n := range [][]string{
		{"traces", "torch_mlp_managed.sqlite"},
		{"traces", "torch_mlp_device.sqlite"},
		{"external", "nsys", "pipit_cloverleaf-cuda_perlmutter_4gpu_2024.5.1.sqlite"},
	} {
		paths = append(paths, testshared.Need(t, n...))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := openInParts(t, path)
			cols := needed[ingest.API]
			rows := newCollector()
			if err := r.ScanColumns(ingest.API, cols, func(rec arrow.RecordBatch) error { rows.addAPI(rec); return nil }); err != nil {
				t.Fatal(err)
			}
			prepared := newCollector()
			// The first batch's prep waits (a while at most) for another
			// to start: two parts' batches are then prepared at once.
			var mu sync.Mutex
			preps, overlapped := 0, false
			second := make(chan struct{})
			err := r.ScanPrepared(ingest.API, cols, func(rec arrow.RecordBatch) any {
				mu.Lock()
				preps++
				n := preps
				mu.Unlock()
				switch n {
				case 1:
					select {
					case <-second:
						overlapped = true
					case <-time.After(2 * time.Second):
					}
				case 2:
					close(second)
				}
				return prepAPI(prepared, rec)
			}, func(_ arrow.RecordBatch, v any) error { v.(func())(); return nil })
			if err != nil {
				t.Fatal(err)
			}
			want, got := apiStateOf(rows), apiStateOf(prepared)
			if len(want.Calls) == 0 || len(want.Procs) == 0 || len(want.First) == 0 {
				t.Fatalf("%d calls, %d processes, %d first runtime calls: the trace tests nothing", len(want.Calls), len(want.Procs), len(want.First))
			}
			if !reflect.DeepEqual(got, want) {
				for _, d := range []struct {
					what string
					g, w any
				}{{"names", got.Names, want.Names}, {"calls", got.Calls, want.Calls}, {"processes", got.Procs, want.Procs},
					{"threads", got.Threads, want.Threads}, {"graph launches", got.Graph, want.Graph}, {"first runtime calls", got.First, want.First}} {
					if !reflect.DeepEqual(d.g, d.w) {
						t.Errorf("prepared batches: the %s differ from addAPI's", d.what)
					}
				}
			}
			if path == ad && runtime.GOMAXPROCS(0) > 1 && !overlapped {
				t.Error("no two batches of the synth's parts were prepared at once")
			}
			t.Logf("%d calls, %d processes, %d threads; batches prepared at once: %v", len(want.Calls), len(want.Procs), len(want.Threads), overlapped)
		})
	}
}

// TestPreparedAPITies: the cases real traces rarely hold. Runtime calls of
// one process that tie on start and end (within a batch, process 9, and
// across batches, process 7: the first in storage order is the first
// runtime call),
// durations that do not fit 32 bits or are negative, a graph launch and a
// managed allocation, taken batch after batch.
func TestPreparedAPITies(t *testing.T) {
	const s = int64(1_000_000_000)
	batches := [][]ingesttest.Row{
		{ingesttest.APICall(7, 2, "cudaLaunchKernel", 5*s, 5*s+10), ingesttest.APICall(7, 3, "cudaMemcpy_v3020", 5*s, 5*s+10),
			ingesttest.APICall(8, 1, "cuLaunchKernel", 4*s, 4*s+1), ingesttest.APICall(7, 4, "cudaDeviceSynchronize", 6*s, 12*s),
			ingesttest.APICall(9, 1, "cudaMalloc", 3*s, 3*s+5), ingesttest.APICall(9, 2, "cudaFree", 3*s, 3*s+5)},
		{ingesttest.APICall(7, 5, "cudaMalloc", 5*s, 5*s+10), ingesttest.APICall(8, 2, "cudaMallocManaged", 9*s, 9*s-3),
			ingesttest.APICall(8, 1, "cudaGraphLaunch", 4*s+1, 4*s+70000), ingesttest.APICall(7, 2, "cudaLaunchKernel", 5*s, 5*s+9)},
		{ingesttest.APICall(8, 3, "cudaStreamSynchronize", 4*s+1, 4*s+70000), ingesttest.APICall(7, 6, "cudaFree", 5*s, 5*s+9)},
	}
	rows, prepared := newCollector(), newCollector()
	for _, b := range batches {
		tr := ingesttest.New("ties.sqlite").Add(ingest.API, b...)
		if err := tr.Scan(ingest.API, func(rec arrow.RecordBatch) error {
			rows.addAPI(rec)
			prepAPI(prepared, rec)()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want, got := apiStateOf(rows), apiStateOf(prepared)
	if f := want.First[7]; f.tid != 2 || f.end != 5*s+9 {
		t.Fatalf("addAPI's first runtime call of process 7 is thread %d ending at %d, want thread 2's ending at %d", f.tid, f.end, 5*s+9)
	}
	if f := want.First[9]; f.tid != 1 {
		t.Fatalf("addAPI's first runtime call of process 9 is thread %d's, want thread 1's", f.tid)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prepared batches differ from addAPI's:\n got %+v\nwant %+v", got, want)
	}
}

// workState is what the kernel table's consumer leaves in a collector.
type workState struct {
	Names   []string
	Streams map[streamKey][]gpuWork
	Spans   map[int64]span
	Long    map[longKey]int64
}

func workStateOf(c *collector) workState {
	c.nameKernels()
	s := workState{Streams: map[streamKey][]gpuWork{}, Spans: map[int64]span{}, Long: c.longWork}
	for id := range c.kernelNames.Len() {
		s.Names = append(s.Names, c.kernelNames.Name(int32(id)))
	}
	for k, l := range c.kernels {
		s.Streams[k] = l.AppendTo(nil)
	}
	for p, w := range c.kernelBy.m {
		s.Spans[p] = w.span
	}
	return s
}

// TestPreparedKernels: the kernel table taken through prepKernels, its
// batches prepared at once on the readers' goroutines, leaves the
// collector as addKernelRows does, row by row: the name ids (given in storage
// order, as StringIds ids and as strings), every stream's kernels in
// order, the processes' spans, and the kernels too long for 32 bits
// (TestPreparedKernelsLong).
func TestPreparedKernels(t *testing.T) {
	dir := t.TempDir()
	paths := []string{smallSynth(t, dir, "address-diverse"), smallSynth(t, dir, "name-diverse")}
	paths = append(paths, testshared.Need(t, "traces", "torch_mlp_managed.sqlite"), testshared.Need(t, "external", "nsys", "pipit_cloverleaf-cuda_perlmutter_4gpu_2024.5.1.sqlite"))
	for _, path := range paths {
		for _, byID := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/ids=%v", filepath.Base(path), byID), func(t *testing.T) {
				r := openInParts(t, path)
				cols := needed[ingest.Kernel]
				mk := func() *collector {
					c := newCollector()
					if byID {
						c.kernelNames.ByID(intern.NameTable(r))
						cols = idCols(needed[ingest.Kernel])
					}
					return c
				}
				rows, prepared := mk(), mk()
				if err := r.ScanColumns(ingest.Kernel, cols, func(rec arrow.RecordBatch) error {
					addKernelRows(rows, rec)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := r.ScanPrepared(ingest.Kernel, cols, func(rec arrow.RecordBatch) any { return prepKernels(prepared, rec) },
					func(_ arrow.RecordBatch, v any) error { v.(func())(); return nil }); err != nil {
					t.Fatal(err)
				}
				want, got := workStateOf(rows), workStateOf(prepared)
				if len(want.Streams) == 0 || len(want.Names) == 0 {
					t.Fatalf("%d streams, %d names: the trace tests nothing", len(want.Streams), len(want.Names))
				}
				for _, d := range []struct {
					what string
					g, w any
				}{{"names", got.Names, want.Names}, {"streams", got.Streams, want.Streams}, {"spans", got.Spans, want.Spans}, {"long kernels", got.Long, want.Long}} {
					if !reflect.DeepEqual(d.g, d.w) {
						t.Errorf("prepared batches: the %s differ from addKernelRows'", d.what)
					}
				}
				t.Logf("%d streams, %d names", len(want.Streams), len(want.Names))
			})
		}
	}
}

// TestPreparedKernelsLong: kernels longer than 4.29 s or ending before
// they start keep their duration in longWork under their name, batch
// after batch, as addKernelRows keeps it.
func TestPreparedKernelsLong(t *testing.T) {
	const s = int64(1_000_000_000)
	batches := [][]ingesttest.Row{
		{ingesttest.KernelRun(7, 0, 3, "gemm", s, 2*s), ingesttest.KernelRun(7, 0, 4, "relu", s, 9*s), ingesttest.KernelRun(8, 1, 3, "gemm", 3*s, 3*s-5)},
		{ingesttest.KernelRun(7, 0, 4, "softmax", 2*s, 8*s), ingesttest.KernelRun(7, 0, 3, "relu", 4*s, 4*s+9), ingesttest.KernelRun(8, 1, 3, "gemm", 5*s, 5*s+1)},
	}
	rows, prepared := newCollector(), newCollector()
	for _, b := range batches {
		tr := ingesttest.New("long.sqlite").Add(ingest.Kernel, b...)
		if err := tr.Scan(ingest.Kernel, func(rec arrow.RecordBatch) error {
			addKernelRows(rows, rec)
			prepKernels(prepared, rec)()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want, got := workStateOf(rows), workStateOf(prepared)
	if len(want.Long) != 3 {
		t.Fatalf("addKernelRows kept %d long kernels, want 3", len(want.Long))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prepared batches differ from addKernelRows':\n got %+v\nwant %+v", got, want)
	}
}

// copyState is what the memcpy table's consumer leaves in a collector.
type copyState struct {
	Migrations []migration
	Procs      map[int64]pidWork
	Copies     map[streamKey][]gpuWork
	CopyStream map[pidCorr]int64
	Long       map[longKey]int64
}

func copyStateOf(c *collector) copyState {
	s := copyState{Migrations: c.migrations, Procs: map[int64]pidWork{}, Copies: map[streamKey][]gpuWork{}, CopyStream: c.copyStream, Long: c.longWork}
	for p, w := range c.memcpyBy.m {
		s.Procs[p] = *w
	}
	for k, l := range c.copies {
		s.Copies[k] = l.AppendTo(nil)
	}
	return s
}

// TestPreparedMemcpy: the memcpy table taken through prepMemcpy, batches
// prepared at once, leaves the collector as addMemcpyRows does, row by row:
// the migrations in order, each process's span and clamped migrations,
// the copies by stream with their correlation ids, on an address-diverse
// synth (four processes), PyTorch's copies and external exports of
// managed memory; and rows whose duration or size does not fit 32 bits,
// copy kinds out of range, batch after batch.
func TestPreparedMemcpy(t *testing.T) {
	ad := smallSynth(t, t.TempDir(), "address-diverse")
	paths := []string{ad, testshared.Need(t, "traces", "torch_mlp_managed.sqlite"), testshared.Need(t, "traces", "um_pingpong_explicit.sqlite"),
		testshared.Need(t, "external", "nsys", "csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite")}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := openInParts(t, path)
			cols := needed[ingest.Memcpy]
			rows, prepared := newCollector(), newCollector()
			if err := r.ScanColumns(ingest.Memcpy, cols, func(rec arrow.RecordBatch) error { addMemcpyRows(rows, rec); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := r.ScanPrepared(ingest.Memcpy, cols, func(rec arrow.RecordBatch) any { return prepMemcpy(prepared, rec) },
				func(_ arrow.RecordBatch, v any) error { v.(func())(); return nil }); err != nil {
				t.Fatal(err)
			}
			want, got := copyStateOf(rows), copyStateOf(prepared)
			if len(want.Migrations)+len(want.Copies) == 0 {
				t.Fatal("no migrations or copies: the trace tests nothing")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("prepared batches differ from addMemcpyRows' (%d vs %d migrations, %d vs %d copy streams)", len(got.Migrations), len(want.Migrations), len(got.Copies), len(want.Copies))
			}
			t.Logf("%d migrations, %d copy streams", len(want.Migrations), len(want.Copies))
		})
	}
	t.Run("clamped", func(t *testing.T) {
		const s = int64(1_000_000_000)
		copyRow := func(pid, stream int64, kind int32, start, end int64) ingesttest.Row {
			return ingesttest.Row{ingest.ColPid: pid, ingest.ColStreamID: stream, ingest.ColCopyKind: kind, ingest.ColStart: start, ingest.ColEnd: end,
				ingest.ColBytes: int64(4096), ingest.ColCorrelationID: int64(start % 1000)}
		}
		batches := [][]ingesttest.Row{
			{ingesttest.Migration(7, 0, s, 9*s, 1<<20, 0x7000), ingesttest.Migration(8, 0, 2*s, 2*s+5, 8<<30, 0x8000), copyRow(7, 3, 1, s, 2*s), copyRow(8, 4, 2, 3*s+7, 9*s)},
			{ingesttest.Migration(7, 0, 4*s, 4*s-1, 4096, 0x9000), copyRow(7, 3, 99, 5*s+3, 5*s+9), ingesttest.Migration(8, 0, 6*s, 6*s+1, 4096, 0xa000)},
		}
		rows, prepared := newCollector(), newCollector()
		for _, b := range batches {
			tr := ingesttest.New("clamped.sqlite").Add(ingest.Memcpy, b...)
			if err := tr.Scan(ingest.Memcpy, func(rec arrow.RecordBatch) error {
				addMemcpyRows(rows, rec)
				prepMemcpy(prepared, rec)()
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		want, got := copyStateOf(rows), copyStateOf(prepared)
		if want.Procs[7].clamped != 2 || want.Procs[8].clamped != 1 || len(want.Long) != 1 {
			t.Fatalf("addMemcpyRows clamped %d and %d migrations and kept %d long copies, want 2, 1 and 1", want.Procs[7].clamped, want.Procs[8].clamped, len(want.Long))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("prepared batches differ from addMemcpyRows':\n got %+v\nwant %+v", got, want)
		}
	})
}

// addMemcpyRows takes the memcpy table's rows into c one by one: what
// prepMemcpy's batches must come to.
func addMemcpyRows(c *collector, r arrow.RecordBatch) {
	t := ingest.Memcpy
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	kind := ingest.I32(r, t, ingest.ColCopyKind)
	by := ingest.I64(r, t, ingest.ColBytes)
	cause := ingest.I32(r, t, ingest.ColMigCause)
	va := ingest.U64(r, t, ingest.ColVirtAddr)
	for i := 0; i < int(r.NumRows()); i++ {
		s, e, p, kd := st.Value(i), en.Value(i), pid.Value(i), copyKind(kind.Value(i))
		pw := c.memcpyBy.get(p)
		pw.span.add(s, e)
		if kd >= 11 && kd <= 13 {
			m, clamped := newMigration(&c.migClasses, s, e, p, by.Value(i), kd, cause, va, i)
			if clamped {
				pw.clamped++
			}
			c.migrations = push(c.migrations, m)
			continue
		}
		c.addCopy(s, e, streamKey{p, strm.Value(i)}, kd, corr, i)
	}
}

// newTapState is the per-device figures' accumulator as newMultiData
// makes it, and its per-process lookup.
func newTapState() (*multiData, func(int64) *multiData) {
	md := newMultiAcc()
	md.procs = map[int64]*multiData{}
	return md, md.proc
}

// forgetLastDev clears procDev's cache in each process's figures, which
// the two paths leave at different devices.
func forgetLastDev(mds ...*multiData) {
	for _, m := range mds {
		for _, x := range m.procs {
			x.lastID, x.lastDev = 0, nil
		}
	}
}

// TestKernelPrep: the per-device tap of the kernel table, names as ids,
// prepared where the batches are read (kernelPrep) gives each process's
// kernel counts and times per device, its NCCL kernels in order and
// their totals as kernelTap does row by row: a rank of a synth NCCL job
// and an address-diverse synth (four processes), in many small parts.
func TestKernelPrep(t *testing.T) {
	dir := t.TempDir()
	jc := synth.DefaultJobConfig()
	jc.Ranks, jc.StormRank = 2, 1
	if _, err := synth.GenerateJob(dir, jc); err != nil {
		t.Fatal(err)
	}
	ad := smallSynth(t, dir, "address-diverse")
	for _, path := range []string{synth.RankFile(dir, 1), ad} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := openInParts(t, path)
			names := intern.NameTable(r)
			if names == nil {
				t.Fatal("the reader gives no kernel name ids")
			}
			rows, rowProc := newTapState()
			prepared, prepProc := newTapState()
			tap, prep := kernelTap(names, rowProc), kernelPrep(names, prepProc, &prepared.mu)
			cols := idCols([]string{ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColDeviceID, ingest.ColName})
			if err := r.ScanColumns(ingest.Kernel, cols, func(rec arrow.RecordBatch) error { tap(rec); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := r.ScanPrepared(ingest.Kernel, cols, func(rec arrow.RecordBatch) any { return prep(rec) },
				func(_ arrow.RecordBatch, v any) error { v.(func())(); return nil }); err != nil {
				t.Fatal(err)
			}
			ncclKernels := 0
			forgetLastDev(rows, prepared)
			for _, x := range rows.procs {
				ncclKernels += len(x.nccl)
			}
			if len(rows.procs) == 0 {
				t.Fatal("no process's kernels: the trace tests nothing")
			}
			if !reflect.DeepEqual(prepared.procs, rows.procs) {
				t.Error("prepared batches: the per-device kernel figures differ from kernelTap's")
			}
			t.Logf("%d processes, %d NCCL kernels", len(rows.procs), ncclKernels)
		})
	}
}

// TestMemcpyPrep: the per-device tap of the memcpy table prepared where
// the batches are read (memcpyPrep) gives each process and device the
// same peer, prefetched and demand-migrated bytes, migrations by kind and
// cause and copies by kind as memcpyTap row by row: an address-diverse
// synth (four processes), PyTorch's and um_pingpong's copies, and an
// external export of four GPUs, in many small parts.
func TestMemcpyPrep(t *testing.T) {
	paths := []string{smallSynth(t, t.TempDir(), "address-diverse"), testshared.Need(t, "traces", "torch_mlp_managed.sqlite"),
		testshared.Need(t, "traces", "um_pingpong_explicit.sqlite"), testshared.Need(t, "external", "nsys", "csc746_2022.2.1_4gpu_um-memcpy18k_report1.sqlite")}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := openInParts(t, path)
			rows, rowProc := newTapState()
			prepared, prepProc := newTapState()
			tap, prep := memcpyTap(rowProc), memcpyPrep(prepProc, &prepared.mu)
			cols := []string{ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColDeviceID, ingest.ColBytes, ingest.ColCopyKind, ingest.ColMigCause}
			if err := r.ScanColumns(ingest.Memcpy, cols, func(rec arrow.RecordBatch) error { tap(rec); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := r.ScanPrepared(ingest.Memcpy, cols, func(rec arrow.RecordBatch) any { return prep(rec) },
				func(_ arrow.RecordBatch, v any) error { v.(func())(); return nil }); err != nil {
				t.Fatal(err)
			}
			devs := 0
			forgetLastDev(rows, prepared)
			for _, x := range rows.procs {
				devs += len(x.devs)
			}
			if devs == 0 {
				t.Fatal("no process's copies: the trace tests nothing")
			}
			if !reflect.DeepEqual(prepared.procs, rows.procs) {
				t.Error("prepared batches: the per-device copy figures differ from memcpyTap's")
			}
			t.Logf("%d processes, %d devices", len(rows.procs), devs)
		})
	}
	t.Run("kinds", func(t *testing.T) {
		// Peer copies (8, 10, 13), migrations of every direction and
		// cause, a cause beyond int8 and none, two processes on two
		// devices, batch after batch.
		row := func(pid, dev int64, kind int32, cause any, start, bytes int64) ingesttest.Row {
			return ingesttest.Row{ingest.ColPid: pid, ingest.ColDeviceID: dev, ingest.ColCopyKind: kind, ingest.ColMigCause: cause,
				ingest.ColStart: start, ingest.ColEnd: start + 1000 + bytes%777, ingest.ColBytes: bytes}
		}
		batches := [][]ingesttest.Row{
			{row(7, 0, 1, nil, 10, 4096), row(7, 1, 8, nil, 20, 1<<20), row(8, 0, 11, int32(2), 30, 65536), row(7, 0, 13, int32(3), 40, 8192)},
			{row(8, 1, 10, nil, 50, 1<<16), row(7, 0, 12, int32(1), 60, 2<<20), row(8, 0, 11, int32(2), 70, 4096), row(7, 1, 2, int32(300), 80, 512)},
		}
		rows, rowProc := newTapState()
		prepared, prepProc := newTapState()
		tap, prep := memcpyTap(rowProc), memcpyPrep(prepProc, &prepared.mu)
		for _, b := range batches {
			tr := ingesttest.New("kinds.sqlite").Add(ingest.Memcpy, b...)
			if err := tr.Scan(ingest.Memcpy, func(rec arrow.RecordBatch) error { tap(rec); prep(rec)(); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		forgetLastDev(rows, prepared)
		if peer := rows.procs[7].devs[0].d.PeerBytes; peer != 8192 {
			t.Fatalf("memcpyTap: process 7 device 0 has %d peer bytes, want 8192", peer)
		}
		if !reflect.DeepEqual(prepared.procs, rows.procs) {
			t.Error("prepared batches: the per-device copy figures differ from memcpyTap's")
		}
	})
}

// memcpyTap sums copies per process and device row by row (peer bytes,
// migrations by cause, ordinary copies by kind): the memcpy table's tap
// until memcpyPrep, now what memcpyPrep's batches must come to.
func memcpyTap(proc func(int64) *multiData) func(arrow.RecordBatch) {
	t2 := ingest.Memcpy
	return func(r arrow.RecordBatch) {
		st, en := ingest.I64(r, t2, ingest.ColStart), ingest.I64(r, t2, ingest.ColEnd)
		pid, dv := ingest.I64(r, t2, ingest.ColPid), ingest.I64(r, t2, ingest.ColDeviceID)
		by, ck, mc := ingest.I64(r, t2, ingest.ColBytes), ingest.I32(r, t2, ingest.ColCopyKind), ingest.I32(r, t2, ingest.ColMigCause)
		for i := 0; i < int(r.NumRows()); i++ {
			d := proc(pid.Value(i)).procDev(pid.Value(i), dv.Value(i))
			kind, b := ck.Value(i), by.Value(i)
			if kind == 8 || kind == 10 || kind == 13 {
				d.d.PeerBytes += b
			}
			cause := int32(-1)
			if !mc.IsNull(i) {
				cause = mc.Value(i)
			}
			if kind >= 11 && kind <= 13 || cause >= 0 {
				d.mig.addExact(int8(kind), int8(cause), b, en.Value(i)-st.Value(i))
				switch {
				case cause == 1:
					d.d.PrefetchBytes += b
				case demand(cause):
					d.d.DemandBytes += b
				}
				continue
			}
			d.copy[copyKindName(kind)] += b
		}
	}
}

// addKernelRows takes the kernel table's rows into c one by one, as collect
// did before prepKernels: what prepKernels' batches must come to.
func addKernelRows(c *collector, r arrow.RecordBatch) {
	t := ingest.Kernel
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	var names ingest.Strings
	var nameIDs *array.Int64
	if c.kernelNames.ByIDs() != nil {
		nameIDs = ingest.I64(r, t, ingest.ColNameID)
	} else {
		names = ingest.Str(r, t, ingest.ColName)
		c.kernelNames.Column(names)
	}
	for i := 0; i < int(r.NumRows()); i++ {
		k := streamKey{pid.Value(i), strm.Value(i)}
		ws := c.kernels[k]
		if ws == nil {
			ws = &chunks.List[gpuWork]{}
			c.kernels[k] = ws
		}
		var name int32
		if nameIDs != nil {
			name = c.kernelNames.SIDKey(nameIDs, i)
		} else {
			name = c.kernelNames.Key(names, i)
		}
		s, e := st.Value(i), en.Value(i)
		ws.Push(c.newWork(k, s, e, name))
		c.kernelBy.get(k.pid).span.add(s, e)
	}
}
