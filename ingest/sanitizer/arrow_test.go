package sanitizer

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	tm "github.com/umtrace/umtrace/ingest"
)

func TestRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	mc := parseShared(t, "sanitizer", "memcheck.txt")
	rc := parseShared(t, "sanitizer", "racecheck.xml")
	rec := Record(mem, mc, rc)
	defer rec.Release()
	tab := tm.SanitizerFinding
	if !rec.Schema().Equal(tab.Schema()) {
		t.Fatalf("schema = %v", rec.Schema())
	}
	if rec.NumRows() != 7 {
		t.Fatalf("rows = %d, want 7", rec.NumRows())
	}
	kind := tm.Str(rec, tab, tm.ColSanKind)
	var got []string
	for i := 0; i < kind.Len(); i++ {
		got = append(got, kind.Value(i))
	}
	want := []string{KindInvalidAccess, KindAPIError, KindAPIError, KindAPIError, KindAPIError, KindLeak, KindRace}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kinds = %v, want %v", got, want)
		}
	}
	if v := tm.Str(rec, tab, tm.ColSanKernelBase).Value(0); v != "oob_write" {
		t.Errorf("kernel_base[0] = %q", v)
	}
	if v := tm.I32(rec, tab, tm.ColSourceLine).Value(0); v != 6 {
		t.Errorf("source_line[0] = %d", v)
	}
	if v := tm.U64(rec, tab, tm.ColPC).Value(0); v != 0xc0 {
		t.Errorf("pc[0] = %#x", v)
	}
	if v := tm.I32(rec, tab, tm.ColSanThreadX).Value(0); v != 232 {
		t.Errorf("thread_idx_x[0] = %d", v)
	}
	if v := tm.I32(rec, tab, tm.ColSanBlockX).Value(0); v != 3 {
		t.Errorf("block_idx_x[0] = %d", v)
	}
	if tm.I32(rec, tab, tm.ColSanThreadX).IsValid(1) || tm.U64(rec, tab, tm.ColPC).IsValid(1) {
		t.Error("API error row has a thread or pc")
	}
	if v := tm.Str(rec, tab, tm.ColSanAPIName).Value(1); v != "cudaDeviceSynchronize" {
		t.Errorf("api_name[1] = %q", v)
	}
	if v := tm.I32(rec, tab, tm.ColSanAPIResult).Value(1); v != 719 {
		t.Errorf("api_result[1] = %d", v)
	}
	leak := tm.I64(rec, tab, tm.ColSanLeakBytes)
	if leak.Value(5) != 4000 || leak.IsValid(0) {
		t.Errorf("leak_bytes = %v", leak)
	}
	if v := tm.Str(rec, tab, tm.ColSanHostFrames).Value(5); v != "cudaMalloc [0x4d076] in bugs\nmain [0x925c] in bugs" {
		t.Errorf("host_frames[5] = %q", v)
	}
	if v := tm.I64(rec, tab, tm.ColSanHazards).Value(6); v != 4096 {
		t.Errorf("hazards[6] = %d", v)
	}
	if v := tm.Str(rec, tab, tm.ColSanFormat).Value(6); v != "xml" {
		t.Errorf("format[6] = %q", v)
	}
	if v := tm.I64(rec, tab, tm.ColSanLogLine).Value(5); v != 26 {
		t.Errorf("log_line[5] = %d", v)
	}
	empty := Record(mem)
	defer empty.Release()
	if empty.NumRows() != 0 {
		t.Errorf("empty rows = %d", empty.NumRows())
	}
}
