package sanitizer

import (
	"reflect"
	"testing"
)

// TestGroupFindings: findings with one Key fall into one group that adds
// up their threads, blocks, hazards, leaked bytes and APIs; groups come in
// the order of their first finding, across logs.
func TestGroupFindings(t *testing.T) {
	oob := func(line int, block, thread int32, api string) Finding {
		return Finding{LogLine: line, Tool: ToolMemcheck, Severity: SevError, Kind: KindInvalidAccess,
			Kernel: "oob(float*)", KernelBase: "oob", File: "a.cu", Line: 6, Space: "global", Access: "write",
			Size: 4, HasSize: true, Detail: "out of bounds", HasThread: true,
			Block: Dim3{block, 0, 0}, Thread: Dim3{thread, 0, 0}, API: api}
	}
	leak := Finding{LogLine: 9, Tool: ToolMemcheck, Severity: SevError, Kind: KindLeak, LeakBytes: 100}
	a := &Log{Findings: []Finding{oob(1, 0, 1, "cudaMalloc"), leak, oob(3, 0, 2, "cudaFree")}}
	b := &Log{Findings: []Finding{oob(2, 1, 1, "cudaMalloc"), leak}}

	got := GroupFindings(ByWhat, a, b)
	if len(got) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(got), got)
	}
	want := Group{Tool: ToolMemcheck, Severity: SevError, Kind: KindInvalidAccess, Kernel: "oob", KernelName: "oob(float*)",
		Location: "a.cu:6", What: "global write, 4 bytes, out of bounds", Count: 3, Threads: 3, Blocks: 2,
		APIs: []string{"cudaMalloc", "cudaFree"}, FirstLine: 1}
	if !reflect.DeepEqual(*got[0], want) {
		t.Errorf("first group:\n got %+v\nwant %+v", *got[0], want)
	}
	if g := got[1]; g.Kind != KindLeak || g.Count != 2 || g.LeakBytes != 200 || g.FirstLine != 9 {
		t.Errorf("leak group: %+v", *g)
	}
	if k := got[0].Key(); k != ByWhat(&a.Findings[0]) {
		t.Errorf("Key() = %+v, want the findings' %+v", k, ByWhat(&a.Findings[0]))
	}
	if d := GroupFindings(ByDetail, a); len(d) != 2 || d[0].What != "out of bounds" || d[0].Count != 2 {
		t.Errorf("ByDetail: %+v", d)
	}
}
