package main

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"
)

// Transparent huge pages for the Go heap: an analysis first-touches a
// heap of hundreds of MB, and with 2 MiB pages it is faulted in with a few
// hundred faults instead of 4 KiB at a time (why it pays:
// docs/performance.md, "Huge pages for the heap"). Linux gives them to anonymous memory only where
// transparent_hugepage is "always" or the range was madvised
// MADV_HUGEPAGE ("madvise", the default of many distributions); the Go
// runtime no longer advises its heap, so umtrace does: it reserves the
// heap it expects (an allocation the runtime maps but never touches),
// advises the runtime's arena range from there on, and lets the
// allocation go, so the heap reuses the advised range; the GC tuner
// advises again after each collection, for ranges mapped since.
// UMTRACE_THP=0 turns it off.

const hugeRange = 64 << 30 // advised bytes above the reserved heap

type hugeHeap struct{ lo uintptr }

// newHugeHeap advises a heap of about n bytes; nil when the kernel gives
// no huge pages on advice (never, always) or UMTRACE_THP=0.
func newHugeHeap(n int64) *hugeHeap {
	if os.Getenv("UMTRACE_THP") == "0" || n <= 0 {
		return nil
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		return nil
	}
	b := make([]byte, n)
	small := new([64]byte)
	lo := min(uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(small)))
	h := &hugeHeap{lo: lo &^ (64<<20 - 1)}
	h.advise()
	return h
}

// advise marks the range as huge-page memory; holes in it (not yet
// mapped) make madvise report ENOMEM after advising the mapped parts.
func (h *hugeHeap) advise() {
	if h == nil {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, h.lo, hugeRange, 14 /* MADV_HUGEPAGE */)
}
