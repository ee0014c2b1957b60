package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeap: where the kernel gives huge pages on advice, the heap
// umtrace reserves is advised (the mapping that holds memory allocated
// after it carries VmFlags "hg"); UMTRACE_THP=0 and small inputs advise
// nothing.
func TestHugeHeap(t *testing.T) {
	if thpBytes(1<<20, memLimits{}) != 0 || thpBytes(1<<30, memLimits{}) < 256<<20 {
		t.Errorf("thpBytes: %d for 1 MiB, %d for 1 GiB", thpBytes(1<<20, memLimits{}), thpBytes(1<<30, memLimits{}))
	}
	t.Setenv("UMTRACE_THP", "0")
	if newHugeHeap(64<<20) != nil {
		t.Error("UMTRACE_THP=0: the heap was advised")
	}
	t.Setenv("UMTRACE_THP", "")
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("transparent huge pages are not given on advice here (%q, %v)", bytes.TrimSpace(mode), err)
	}
	h := newHugeHeap(64 << 20)
	if h == nil {
		t.Fatal("no huge-page heap where transparent_hugepage is madvise")
	}
	b := make([]byte, 16<<20)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	if addr < uint64(h.lo) {
		t.Skipf("the allocation at %#x is below the advised range from %#x", addr, h.lo)
	}
	flags, ok := vmFlags(t, addr)
	if !ok {
		t.Fatalf("no mapping of %#x in /proc/self/smaps", addr)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the heap mapping of %#x is not advised for huge pages: VmFlags %s", addr, flags)
	}
	b[0] = 1
}

// vmFlags returns the VmFlags of the mapping that holds addr.
func vmFlags(t *testing.T, addr uint64) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(l + " ")[0], "-"); ok && !strings.HasSuffix(strings.Fields(l + " ")[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && addr >= a && addr < z
			continue
		}
		if v, ok := strings.CutPrefix(l, "VmFlags:"); ok && in {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
