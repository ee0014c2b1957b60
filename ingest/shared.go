package ingest

import (
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SharedDict is one immutable table of strings that every batch of a scan
// can use as a string column's dictionary (Builder.DictIndex), indexed by
// the source's own string ids (nsys StringIds): no per-batch copy of the
// strings and, for consumers, dictionary keys that mean the same string in
// every batch (Strings.Shared). Its bytes are garbage-collected Go memory,
// never reused, so its values stay valid after the batches are released.
type SharedDict struct {
	arr *array.String
}

// NewSharedDict returns the dictionary whose entry k is
// data[offsets[k]:offsets[k+1]]; offsets ascend, len(offsets) is the
// number of entries plus one. Neither may be changed afterwards.
func NewSharedDict(data []byte, offsets []int32) *SharedDict {
	n := max(len(offsets)-1, 0)
	if len(offsets) == 0 {
		offsets = []int32{0}
	}
	offBytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(offsets))), 4*len(offsets))
	d := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(offBytes), memory.NewBufferBytes(data)}, nil, 0, 0)
	sd := &SharedDict{arr: array.NewStringData(d)}
	d.Release()
	register(sd.arr.Data())
	return sd
}

// Len is the number of entries.
func (d *SharedDict) Len() int { return d.arr.Len() }

// shared holds the data of live SharedDicts, weakly: Strings.Shared looks
// a batch's dictionary up here.
var shared sync.Map // uintptr (the arrow.ArrayData's address) → weak.Pointer

type dataPtr = array.Data

func register(d arrow.ArrayData) {
	p := d.(*dataPtr)
	key := uintptr(unsafe.Pointer(p))
	shared.Store(key, weak.Make(p))
	runtime.AddCleanup(p, func(k uintptr) {
		// Unless a newer dictionary at the same address replaced it.
		if w, ok := shared.Load(k); ok && w.(weak.Pointer[dataPtr]).Value() == nil {
			shared.CompareAndDelete(k, w)
		}
	}, key)
}

// Shared reports whether the column's dictionary is a SharedDict: its keys
// (Key) then mean the same string in every batch that shares it, and its
// values (DictValue) outlive the batch.
func (s Strings) Shared() bool {
	p, ok := s.dict.Data().(*dataPtr)
	if !ok {
		return false
	}
	w, ok := shared.Load(uintptr(unsafe.Pointer(p)))
	return ok && w.(weak.Pointer[dataPtr]).Value() == p
}

// DictID identifies the column's dictionary: batches with the same DictID
// share one dictionary (a SharedDict).
func (s Strings) DictID() uintptr {
	p, _ := s.dict.Data().(*dataPtr)
	return uintptr(unsafe.Pointer(p))
}
