package sanitizer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func wantCounts(t *testing.T, l *Log, want map[string]int) {
	t.Helper()
	if got := l.Counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: counts = %v, want %v", l.Path, got, want)
	}
}

func noWarnings(t *testing.T, l *Log) {
	t.Helper()
	for _, w := range l.Warnings {
		t.Errorf("unexpected warning: %v", w)
	}
}

func TestH200Memcheck(t *testing.T) {
	l := parseShared(t, "sanitizer", "memcheck.txt")
	noWarnings(t, l)
	if l.Format != "text" || l.Driver != "compute-sanitizer" || l.Tool != ToolMemcheck {
		t.Errorf("format/driver/tool = %s/%s/%s", l.Format, l.Driver, l.Tool)
	}
	wantCounts(t, l, map[string]int{KindInvalidAccess: 1, KindAPIError: 4, KindLeak: 1})
	want := Summary{HasErrors: true, Errors: 6, HasLeaks: true, LeakBytes: 4000, LeakAllocations: 1}
	if l.Summary != want {
		t.Errorf("summary = %+v, want %+v", l.Summary, want)
	}
	if l.Errors() != 6 {
		t.Errorf("Errors() = %d, want 6", l.Errors())
	}
	w := l.Findings[0]
	if w.Kind != KindInvalidAccess || w.Access != "write" || w.Space != "global" || w.Size != 4 ||
		w.Kernel != "oob_write(float *, int)" || w.KernelBase != "oob_write" || w.Location() != "bugs.cu:6" ||
		w.PC != 0xc0 || w.Thread != (Dim3{232, 0, 0}) || w.Block != (Dim3{3, 0, 0}) ||
		w.Address != 0x7f09da800fa0 || w.AllocAddress != 0x7f09da800000 || w.AllocSize != 4000 ||
		w.Detail != "out of bounds; 1 bytes after the nearest allocation" || w.LogLine != 2 ||
		!reflect.DeepEqual(w.HostFrames, []string{"main [0x9329] in bugs"}) {
		t.Errorf("invalid write = %+v", w)
	}
	apis := []string{}
	for _, f := range l.Findings[1:5] {
		if f.Kind != KindAPIError || f.APIError != "cudaErrorLaunchFailure" || f.APIResult != 719 || f.Detail != "unspecified launch failure" || f.Tool != ToolMemcheck {
			t.Errorf("api error = %+v", f)
		}
		apis = append(apis, f.API)
	}
	if want := []string{"cudaDeviceSynchronize", "cudaMalloc", "cudaFree", "cudaGetLastError"}; !reflect.DeepEqual(apis, want) {
		t.Errorf("APIs = %v, want %v", apis, want)
	}
	leak := l.Findings[5]
	if !leak.HasLeak || leak.LeakBytes != 4000 || leak.Address != 0x7f09da800000 || leak.LogLine != 26 ||
		!reflect.DeepEqual(leak.HostFrames, []string{"cudaMalloc [0x4d076] in bugs", "main [0x925c] in bugs"}) {
		t.Errorf("leak = %+v", leak)
	}
}

func TestH200Racecheck(t *testing.T) {
	l := parseShared(t, "sanitizer", "racecheck.txt")
	noWarnings(t, l)
	wantCounts(t, l, map[string]int{KindRace: 1})
	want := Summary{HasRace: true, RaceRecords: 1, RaceErrors: 1}
	if l.Summary != want || l.Tool != ToolRacecheck {
		t.Errorf("summary = %+v tool %s", l.Summary, l.Tool)
	}
	f := l.Findings[0]
	if f.Severity != SevError || f.Hazards != 4096 || f.Access != "write" || f.KernelBase != "shared_race" ||
		f.Location() != "bugs.cu:9" || f.PC != 0x170 ||
		len(f.RaceWith) != 1 || f.RaceWith[0].String() != "read at shared_race+0x1f0 (bugs.cu:10) [4096 hazards]" {
		t.Errorf("race = %+v", f)
	}
}

func TestH200Initcheck(t *testing.T) {
	l := parseShared(t, "sanitizer", "initcheck.txt")
	noWarnings(t, l)
	wantCounts(t, l, map[string]int{KindUninitialized: 100})
	want := Summary{HasErrors: true, Errors: 1000, NotPrinted: 900}
	if l.Summary != want || l.Tool != ToolInitcheck {
		t.Errorf("summary = %+v tool %s", l.Summary, l.Tool)
	}
	for i, f := range l.Findings {
		if f.KernelBase != "uninit_read" || f.Location() != "bugs.cu:12" || f.Thread != (Dim3{int32(i), 0, 0}) ||
			f.Block != (Dim3{2, 0, 0}) || f.Size != 4 || f.Space != "global" || f.Access != "read" ||
			f.Address != 0x7fbe18800800+uint64(4*i) {
			t.Fatalf("record %d = %+v", i, f)
		}
	}
}

func TestH200Synccheck(t *testing.T) {
	l := parseShared(t, "sanitizer", "synccheck.txt")
	noWarnings(t, l)
	wantCounts(t, l, map[string]int{KindBarrierError: 16})
	if want := (Summary{HasErrors: true, Errors: 16}); l.Summary != want || l.Tool != ToolSynccheck {
		t.Errorf("summary = %+v tool %s", l.Summary, l.Tool)
	}
	for i, f := range l.Findings {
		if f.KernelBase != "divergent_barrier" || f.Location() != "bugs.cu:14" || f.PC != 0x60 ||
			f.Thread != (Dim3{int32(i), 0, 0}) || f.Detail != "Divergent thread(s) in warp" {
			t.Fatalf("record %d = %+v", i, f)
		}
	}
}

// key is what a text and an XML log of the same run share: addresses differ
// between runs, XML gives full paths, bare function names and every host frame.
func key(f *Finding) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s:%d|pc=%x,%v|%v %v %v|size=%d,%v|%s|%s|%s|haz=%d|%s|%s|%d|leak=%d|frames=%v",
		f.Tool, f.Severity, f.Kind, f.KernelBase, filepath.Base(f.File), f.Line, f.PC, f.HasPC,
		f.Thread, f.Block, f.HasThread, f.Size, f.HasSize, f.Space, f.Access, strings.SplitN(f.Detail, ";", 2)[0],
		f.Hazards, f.API, f.APIError, f.APIResult, f.LeakBytes, len(f.HostFrames) > 0) + peers(f)
}

func peers(f *Finding) string {
	s := ""
	for _, a := range f.RaceWith {
		a.File = filepath.Base(a.File)
		a.Kernel = BaseName(a.Kernel)
		s += "|" + a.String()
	}
	return s
}

// subsequence reports whether every element of a appears in b, in order.
func subsequence(a, b []string) bool {
	j := 0
	for _, s := range b {
		if j < len(a) && a[j] == s {
			j++
		}
	}
	return j == len(a)
}

func TestXMLMatchesText(t *testing.T) {
	for _, tool := range []string{"memcheck", "racecheck", "initcheck", "synccheck"} {
		t.Run(tool, func(t *testing.T) {
			tx := parseShared(t, "sanitizer", tool+".txt")
			xl := parseShared(t, "sanitizer", tool+".xml")
			noWarnings(t, xl)
			if xl.Format != "xml" || xl.Tool != tx.Tool {
				t.Errorf("xml format %s tool %s, text tool %s", xl.Format, xl.Tool, tx.Tool)
			}
			if len(xl.Findings) != len(tx.Findings) {
				t.Fatalf("xml %d findings, text %d", len(xl.Findings), len(tx.Findings))
			}
			for i := range tx.Findings {
				a, b := &tx.Findings[i], &xl.Findings[i]
				if ka, kb := key(a), key(b); ka != kb {
					t.Errorf("record %d:\ntext %s\nxml  %s", i, ka, kb)
				}
				// The text shows a filtered backtrace; XML keeps every frame.
				if !subsequence(a.HostFrames, b.HostFrames) {
					t.Errorf("record %d: text frames %q not within xml frames %q", i, a.HostFrames, b.HostFrames)
				}
				if a.HasAddress != b.HasAddress || a.Address&0xffff != b.Address&0xffff {
					t.Errorf("record %d: address %#x vs %#x: page offsets differ", i, a.Address, b.Address)
				}
			}
		})
	}
}

// TestExternal pins what each public log gives, including the warnings for
// the ones cut short.
func TestExternal(t *testing.T) {
	type want struct {
		driver, tool string
		counts       map[string]int
		sum          Summary
		warnings     []string // message prefixes, in order
	}
	cut := "log ends inside a record"
	nosum := "no ERROR SUMMARY"
	tests := map[string]want{
		"cuda-memcheck_memcheck_invalid-global-write_tpbarron-cuda_ann.txt": {"cuda-memcheck", ToolMemcheck,
			map[string]int{KindInvalidAccess: 54, KindAPIError: 1}, Summary{HasErrors: true, Errors: 55}, nil},
		"file_md-info-fused-residual-rmsnorm_compute-sanitizer_memcheck_clean.log": {"compute-sanitizer", ToolMemcheck,
			map[string]int{}, Summary{HasErrors: true}, nil},
		"issue_C-SAW-4_cuda-memcheck_invalid-global-write_2-device-frames.txt": {"", ToolMemcheck,
			map[string]int{KindInvalidAccess: 1}, Summary{}, []string{cut, nosum}},
		"issue_E3SM-scream-2379_cuda-memcheck_deprecation-banner.txt": {"cuda-memcheck", ToolMemcheck,
			map[string]int{}, Summary{}, []string{nosum}},
		"issue_MTSS-27_cuda-memcheck_invalid-global-read_stripped-host.txt": {"", ToolMemcheck,
			map[string]int{KindInvalidAccess: 1}, Summary{}, []string{cut, nosum}},
		"issue_NVIDIA-cudf-2820_cuda-memcheck_invalid-global-read_hostframes.txt": {"cuda-memcheck", ToolMemcheck,
			map[string]int{KindInvalidAccess: 1}, Summary{}, []string{cut, nosum}},
		"issue_NVIDIA-cudf-8873_compute-sanitizer_initcheck_uninit-global-read.txt": {"compute-sanitizer", ToolInitcheck,
			map[string]int{KindUninitialized: 2}, Summary{}, []string{cut, nosum}},
		"issue_ORNL-HeCBench-112_compute-sanitizer_memcheck_nearest-allocation.txt": {"", ToolMemcheck,
			map[string]int{KindInvalidAccess: 1}, Summary{}, []string{cut, nosum}},
		"issue_ORNL-HeCBench-133_compute-sanitizer_racecheck_max-hazards.txt": {"compute-sanitizer", ToolRacecheck,
			map[string]int{KindHazardLimit: 1, KindRace: 1}, Summary{}, []string{nosum}},
		"issue_kokkos-1958_cuda-memcheck_synccheck_barrier-error.txt": {"cuda-memcheck", ToolSynccheck,
			map[string]int{KindBarrierError: 1}, Summary{}, []string{cut, nosum}},
		"issue_kokkos-6217_compute-sanitizer_racecheck_warning_G-lineinfo.txt": {"compute-sanitizer", ToolRacecheck,
			map[string]int{KindRace: 1}, Summary{HasRace: true, RaceRecords: 1, RaceWarnings: 1}, nil},
	}
	dir := sharedDir(t, "external", "sanitizer")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(tests) {
		t.Errorf("%d files in %s, test knows %d", len(ents), dir, len(tests))
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := ParseFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if l.Driver != w.driver || l.Tool != w.tool {
				t.Errorf("driver/tool = %q/%q, want %q/%q", l.Driver, l.Tool, w.driver, w.tool)
			}
			wantCounts(t, l, w.counts)
			if l.Summary != w.sum {
				t.Errorf("summary = %+v, want %+v", l.Summary, w.sum)
			}
			var got []string
			for _, e := range l.Warnings {
				got = append(got, e.Msg)
			}
			ok := len(got) == len(w.warnings)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], w.warnings[i])
			}
			if !ok {
				t.Errorf("warnings = %q, want prefixes %q", got, w.warnings)
			}
		})
	}
}

func TestExternalDetails(t *testing.T) {
	l := parseShared(t, "external", "sanitizer", "cuda-memcheck_memcheck_invalid-global-write_tpbarron-cuda_ann.txt")
	f := l.Findings[0]
	if f.LogLine != 25 || f.KernelBase != "init_deltas_v2" || f.Line != 145 || f.PC != 0x188 ||
		f.Thread != (Dim3{95, 0, 0}) || f.Block != (Dim3{681, 0, 0}) || f.Address != 0x5005ea77c || len(f.HostFrames) != 10 {
		t.Errorf("first = %+v", f)
	}
	api := l.Findings[54]
	if api.Kind != KindAPIError || api.API != "cudaMemcpy" || api.APIResult != 4 || api.APIError != "" {
		t.Errorf("api = %+v", api)
	}

	l = parseShared(t, "external", "sanitizer", "issue_ORNL-HeCBench-133_compute-sanitizer_racecheck_max-hazards.txt")
	r := l.Findings[1]
	if r.Severity != SevWarning || r.Hazards != 294291+294127 || len(r.RaceWith) != 2 || r.Access != "read" || r.PC != 0x260 || r.KernelBase != "compress" {
		t.Errorf("race = %+v", r)
	}
	if p := r.RaceWith[1]; p.Access != "write" || p.PC != 0x2b0 || p.Hazards != 294127 || p.Where() != "compress+0x2b0" {
		t.Errorf("second access = %+v", p)
	}

	l = parseShared(t, "external", "sanitizer", "issue_C-SAW-4_cuda-memcheck_invalid-global-write_2-device-frames.txt")
	f = l.Findings[0]
	if f.KernelBase != "frontier" || f.File != "/home/C-SAW/non-stream/functions.cuh" || f.Line != 992 || f.PC != 0x1570 ||
		len(f.DeviceFrames) != 2 || len(f.HostFrames) != 2 {
		t.Errorf("C-SAW = %+v", f)
	}

	l = parseShared(t, "external", "sanitizer", "issue_kokkos-6217_compute-sanitizer_racecheck_warning_G-lineinfo.txt")
	f = l.Findings[0]
	if f.Hazards != 4 || f.Line != 249 || f.PC != 0x1f20 || f.KernelBase != "operator()" || len(f.RaceWith) != 1 {
		t.Errorf("kokkos race = %+v", f)
	}

	l = parseShared(t, "external", "sanitizer", "issue_NVIDIA-cudf-8873_compute-sanitizer_initcheck_uninit-global-read.txt")
	if f := l.Findings[1]; f.KernelBase != "count_set_bits_kernel" || f.PC != 0x290 || f.Size != 1 || f.Thread != (Dim3{1, 0, 0}) {
		t.Errorf("cudf initcheck = %+v", f)
	}

	l = parseShared(t, "external", "sanitizer", "issue_kokkos-1958_cuda-memcheck_synccheck_barrier-error.txt")
	if f := l.Findings[0]; f.Detail != "Invalid arguments" || f.Thread != (Dim3{0, 30, 0}) || f.PC != 0x30 || len(f.DeviceFrames) != 2 {
		t.Errorf("kokkos synccheck = %+v", f)
	}
}

func readShared(t *testing.T, sub ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(sharedDir(t, sub...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLineEndings(t *testing.T) {
	lf := readShared(t, "sanitizer", "memcheck.txt")
	base, err := ParseText(bytes.NewReader(lf), "lf")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"crlf": bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n")),
		"cr":   bytes.ReplaceAll(lf, []byte("\n"), []byte("\r")),
		"bom":  append([]byte("\xEF\xBB\xBF"), lf...),
	} {
		l, err := Parse(bytes.NewReader(data), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(l.Findings, base.Findings) || l.Summary != base.Summary || len(l.Warnings) != 0 {
			t.Errorf("%s: differs from LF (%d findings, %d warnings)", name, len(l.Findings), len(l.Warnings))
		}
		// A CR at the end of one read and its LF in the next are one break.
		l, err = Parse(iotest.OneByteReader(bytes.NewReader(data)), name)
		if err != nil || !reflect.DeepEqual(l.Findings, base.Findings) || l.Lines != base.Lines {
			t.Errorf("%s, one byte per read: %v, %d lines, want %d", name, err, l.Lines, base.Lines)
		}
	}
}

// TestTruncated cuts the memcheck log after every line: each prefix parses,
// never yields more than the whole, and warns when it ends mid-record.
func TestTruncated(t *testing.T) {
	data := readShared(t, "sanitizer", "memcheck.txt")
	lines := strings.SplitAfter(string(data), "\n")
	for n := 1; n < len(lines)-1; n++ { // the last element is the empty string after the final newline
		l, err := ParseText(strings.NewReader(strings.Join(lines[:n], "")), "cut")
		if err != nil {
			t.Fatalf("%d lines: %v", n, err)
		}
		if len(l.Findings) > 6 {
			t.Fatalf("%d lines: %d findings", n, len(l.Findings))
		}
		if len(l.Warnings) == 0 {
			t.Errorf("%d lines: no warning for a cut log", n)
		}
	}
	// Cut mid-line, too.
	l, err := ParseText(bytes.NewReader(data[:200]), "cut")
	if err != nil || len(l.Findings) != 1 || l.Findings[0].Kind != KindInvalidAccess {
		t.Fatalf("cut at 200 bytes: %v %+v", err, l)
	}
	xml := readShared(t, "sanitizer", "memcheck.xml")
	x, err := ParseXML(bytes.NewReader(xml[:len(xml)/2]), "cut.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Findings) != 2 || len(x.Warnings) != 1 || !strings.Contains(x.Warnings[0].Msg, "cut short") {
		t.Errorf("half XML: %d findings, warnings %v", len(x.Findings), x.Warnings)
	}
}

// Formats without a shared real log, as printed by the tools' documentation:
// the ==PID== prefix, legacy racecheck hazards, thousands separators,
// program output running into a sanitizer line.
func TestSynthetic(t *testing.T) {
	in := "==4242== CUDA-MEMCHECK\n" +
		"==4242== ERROR: Potential WAW hazard detected at __shared__ 0x0 in block (0, 0, 0) :\n" +
		"==4242==     Write Thread (31, 0, 0) at 0x00000088 in raceWAW.cu:8:WAW(void)\n" +
		"==4242==     Write Thread (0, 0, 0) at 0x00000088 in raceWAW.cu:8:WAW(void)\n" +
		"==4242==     Current Value : 31, Incoming Value : 0\n" +
		"==4242==\n" +
		"==4242== WARN:(Warp Level Programming) Potential RAW hazard detected at __shared__ 0x3 in block (1, 0, 0) :\n" +
		"==4242==     Write Thread (2, 0, 0) at 0x00000010 in k.cu:3:void k<int>(int*)\n" +
		"==4242==     Read Thread (3, 0, 0) at 0x00000020 in k.cu:4:void k<int>(int*)\n" +
		"==4242==\n" +
		"==4242== RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n"
	l, err := ParseText(strings.NewReader(in), "pid")
	if err != nil {
		t.Fatal(err)
	}
	noWarnings(t, l)
	wantCounts(t, l, map[string]int{KindRace: 2})
	a, b := l.Findings[0], l.Findings[1]
	if a.Severity != SevError || a.Detail != "WAW hazard; Current Value : 31, Incoming Value : 0" || a.Space != "shared" ||
		a.Access != "write" || a.Thread != (Dim3{31, 0, 0}) || a.KernelBase != "WAW" || a.Line != 8 || len(a.RaceWith) != 1 {
		t.Errorf("WAW = %+v", a)
	}
	if got := a.RaceWith[0].String(); got != "write by thread (0,0,0) at WAW+0x88 (raceWAW.cu:8)" {
		t.Errorf("WAW peer = %q", got)
	}
	if b.Severity != SevWarning || b.Block != (Dim3{1, 0, 0}) || b.Address != 3 || b.KernelBase != "k" || b.Detail != "RAW hazard (Warp Level Programming)" {
		t.Errorf("RAW = %+v", b)
	}

	in = "========= COMPUTE-SANITIZER\n" +
		"========= Leaked 4.000 bytes at 0x10\n" +
		"=========\n" +
		"========= Leaked 1 234 567 bytes at 0x20\n" +
		"========= \n" +
		"all done========= LEAK SUMMARY: 1,238,567 bytes leaked in 2 allocations\n" +
		"========= ERROR SUMMARY: 2 errors\n"
	l, err = ParseText(strings.NewReader(in), "sep")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Findings) != 2 || l.Findings[0].LeakBytes != 4000 || l.Findings[1].LeakBytes != 1234567 ||
		l.Summary.LeakBytes != 1238567 || l.Summary.LeakAllocations != 2 || l.Summary.Errors != 2 {
		t.Errorf("separators: %+v %+v", l.Findings, l.Summary)
	}
	if len(l.Warnings) != 1 || l.Warnings[0].Line != 6 || !strings.Contains(l.Warnings[0].Msg, "program output runs into") {
		t.Errorf("warnings = %v", l.Warnings)
	}
}

func TestWarningFormat(t *testing.T) {
	l, err := ParseText(strings.NewReader("========= Something new\n=========     odd detail\n========= ERROR SUMMARY: 1 error\n"), "x.log")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range l.Warnings {
		got = append(got, w.Error())
	}
	want := []string{`x.log:1: unrecognized record "Something new"`, `x.log:2: unrecognized detail line "odd detail"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %q, want %q", got, want)
	}
	if len(l.Findings) != 1 || l.Findings[0].Kind != KindOther {
		t.Errorf("findings = %+v", l.Findings)
	}
}

func TestNotALog(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "\x00\x01\x02", "<html></html>", "<?xml version=\"1.0\"?><foo/>"} {
		_, err := Parse(strings.NewReader(in), "x")
		if !errors.Is(err, ErrNotSanitizerLog) {
			t.Errorf("%q: err = %v, want ErrNotSanitizerLog", in, err)
		}
	}
	if _, err := Parse(strings.NewReader("<?xml version=\"1.0\"?><ComputeSanitizerOutput><record>"), "x"); err != nil {
		t.Errorf("cut XML with a root: %v", err)
	}
	_, err := ParseFile(filepath.Join(t.TempDir(), "missing.log"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLongLine(t *testing.T) {
	in := "========= COMPUTE-SANITIZER\n========= Invalid __global__ read of size 4 bytes\n=========     at " +
		strings.Repeat("x", maxLineLen+100) + "\n=========     by thread (1,2,3) in block (4,5,6)\n=========\n========= ERROR SUMMARY: 1 error\n"
	l, err := ParseText(strings.NewReader(in), "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Findings) != 1 || l.Findings[0].Thread != (Dim3{1, 2, 3}) || len(l.Findings[0].Kernel) > maxMessage {
		t.Errorf("findings = %d", len(l.Findings))
	}
	if len(l.Warnings) == 0 || l.Warnings[0].Line != 3 {
		t.Errorf("warnings = %v", l.Warnings)
	}
}

func TestBaseName(t *testing.T) {
	for in, want := range map[string]string{
		"void foo<int>(float*)":   "foo",
		"oob_write(float *, int)": "oob_write",
		"oob_write":               "oob_write",
		"MD_DTW_D":                "MD_DTW_D",
		"void ns::bar<2, ns::T<int> >(const float *, int) const": "bar",
		"void cudf::_GLOBAL__N__56_tmpxft_000007d8_00000000_13_null_mask_compute_80_cpp1_ii_049ed517::count_set_bits_kernel<int=256>(unsigned int const *,int,int,int*)": "count_set_bits_kernel",
		"Kokkos::Impl::ParallelFor<F, Kokkos::RangePolicy<> >::operator ()() const":                                                                                      "operator()",
		"_Z9oob_writePfi":                            "oob_write",
		"_ZN2ns3fooIiEEvPf":                          "foo",
		"_ZN7cutlass6KernelINS_4gemmEEEvNT_6ParamsE": "Kernel",
		"__device_stub__Z9oob_writePfi":              "__device_stub__Z9oob_writePfi",
		"":                                           "",
		"void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, F, A>(int, F, A)": "vectorized_elementwise_kernel",
	} {
		if got := BaseName(in); got != want {
			t.Errorf("BaseName(%q) = %q, want %q", in, got, want)
		}
	}
	f := Finding{KernelBase: "foo"}
	if !f.MatchesKernel("void foo<int>(float*)") || !f.MatchesKernel("_Z3fooPf") || f.MatchesKernel("foobar") {
		t.Error("MatchesKernel")
	}
}

// Record types without a shared real log, written as the tools document
// them.
func TestSyntheticRecords(t *testing.T) {
	in := "========= COMPUTE-SANITIZER\n" +
		"========= Host API uninitialized memory access\n" +
		"=========     Uninitialized access at 0x7f0000000000 on access by cudaMemcpy source.\n" +
		"=========     Saved host backtrace up to driver entry point at error\n" +
		"=========         Host Frame: main [0x1234] in app\n" +
		"========= \n" +
		"========= Unused memory in allocation 0x7f0000000200 of size 100 bytes\n" +
		"=========     Not written 100 bytes between offsets 0x0 (0x7f0000000200) and 0x63 (0x7f0000000263) (inclusive)\n" +
		"=========     100% of allocation were unused.\n" +
		"========= \n" +
		"========= Warp Illegal Address\n" +
		"=========     at void k<float>(float *)+0x40 in k.cu:7\n" +
		"=========     by thread (0,0,0) in block (0,0,0)\n" +
		"========= \n" +
		"========= Malloc/Free error encountered : Double free\n" +
		"=========     at 0x100 in free_twice\n" +
		"=========     by thread (0,0,0) in block (0,0,0)\n" +
		"=========     Address 0x10 \n" +
		"========= \n" +
		"========= Target application returned an error\n" +
		"========= ERROR SUMMARY: 4 errors\n"
	l, err := ParseText(strings.NewReader(in), "syn")
	if err != nil {
		t.Fatal(err)
	}
	noWarnings(t, l)
	wantCounts(t, l, map[string]int{KindUninitialized: 1, KindUnusedMemory: 1, KindHardwareException: 1, KindMallocFree: 1, KindToolMessage: 1})
	f := l.Findings
	if f[0].API != "cudaMemcpy" || f[0].Address != 0x7f0000000000 || f[0].Tool != ToolInitcheck || len(f[0].HostFrames) != 1 {
		t.Errorf("host API initcheck = %+v", f[0])
	}
	if f[1].AllocAddress != 0x7f0000000200 || f[1].AllocSize != 100 || !strings.HasSuffix(f[1].Detail, "100% of allocation were unused.") {
		t.Errorf("unused = %+v", f[1])
	}
	if f[2].KernelBase != "k" || f[2].Line != 7 || f[2].PC != 0x40 {
		t.Errorf("hardware = %+v", f[2])
	}
	if f[3].Detail != "Double free" || f[3].KernelBase != "free_twice" || f[3].Address != 0x10 {
		t.Errorf("malloc/free = %+v", f[3])
	}
	if f[4].Severity != SevInfo || l.Errors() != 4 {
		t.Errorf("tool message = %+v, errors %d", f[4], l.Errors())
	}
}
