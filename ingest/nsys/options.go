package nsys

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options configure a Reader. The zero value reads as umtrace does by
// default; the CLI fills them from its flags (and UMTRACE_READER, read
// once there), so the package itself reads no environment and keeps no
// switches of its own.
type Options struct {
	// BatchRows is the number of rows per record batch (default
	// DefaultBatchRows).
	BatchRows int
	// Mem allocates Arrow buffers (default memory.DefaultAllocator).
	Mem memory.Allocator
	// Salvage reads on around damage the reader detects instead of
	// failing with ErrCorrupt; Partial then says so (damage.go).
	Salvage bool
	// Read chooses the read paths (default ReadAuto).
	Read ReadPath
	// ParallelRows is the table size above which a scan reads parts in
	// parallel, a part being about half of it (default
	// DefaultParallelRows; tests make it small to force the parallel path
	// on small tables).
	ParallelRows int64
}

// A ReadPath says how the reader reads the tables' rows.
type ReadPath string

const (
	// ReadAuto reads through the page reader where it can, falling back
	// to SQLite for the rest of a table at the first page it doubts.
	ReadAuto ReadPath = ""
	// ReadPages reads through the page reader with no fallback: a page it
	// doubts is an error (for tests and diagnosis).
	ReadPages ReadPath = "pages"
	// ReadDriver reads every table through SQLite (the bulk C reader for
	// integer columns, the go-sqlite3 driver for text).
	ReadDriver ReadPath = "driver"
	// ReadDriverRows is ReadDriver without the bulk C reader: every row
	// through the go-sqlite3 driver (tests compare the three paths).
	ReadDriverRows ReadPath = "driver-rows"
)

// DefaultBatchRows is the batch size used when Options.BatchRows is 0.
const DefaultBatchRows = 16 << 10

// DefaultParallelRows is Options.ParallelRows's default.
const DefaultParallelRows = 1 << 17

// ParseReadPath checks a read path given by name ("", "pages", "driver",
// "driver-rows"), e.g. the CLI's UMTRACE_READER.
func ParseReadPath(s string) (ReadPath, error) {
	switch p := ReadPath(s); p {
	case ReadAuto, ReadPages, ReadDriver, ReadDriverRows:
		return p, nil
	}
	return "", fmt.Errorf("reader %q: want driver or pages", s)
}

// withDefaults fills the unset options and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	if o.ParallelRows <= 0 {
		o.ParallelRows = DefaultParallelRows
	}
	var err error
	o.Read, err = ParseReadPath(string(o.Read))
	return o, err
}

// pageReads reports whether tables are read through the page reader
// (where it can read the file).
func (o Options) pageReads() bool { return o.Read != ReadDriver && o.Read != ReadDriverRows }
