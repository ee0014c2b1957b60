// Package sanitizer reads compute-sanitizer and cuda-memcheck logs (text and XML) into findings and an Arrow table.
package sanitizer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/umtrace/umtrace/ingest"
)

// Kinds of finding (Finding.Kind).
const (
	KindInvalidAccess     = "invalid_access"
	KindHardwareException = "hardware_exception"
	KindMallocFree        = "malloc_free_error"
	KindAPIError          = "api_error"
	KindLeak              = "leak"
	KindRace              = "race"
	KindHazardLimit       = "hazard_limit"
	KindUninitialized     = "uninitialized_access"
	KindUnusedMemory      = "unused_memory"
	KindBarrierError      = "barrier_error"
	KindToolMessage       = "tool_message"
	KindOther             = "other"
)

// Tools (Finding.Tool, Log.Tool).
const (
	ToolMemcheck  = "memcheck"
	ToolRacecheck = "racecheck"
	ToolInitcheck = "initcheck"
	ToolSynccheck = "synccheck"
)

// Severities (Finding.Severity).
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)

// Limits that keep memory bounded on hostile input. Going past one is a
// warning, not an error.
const (
	maxLineLen  = 1 << 20 // longer lines are cut
	maxFrames   = 256     // per record, host and device frames each
	maxRaceWith = 256     // other accesses per race record
	maxWarnings = 1000    // per log; one more says how many were dropped
	maxMessage  = 4096    // bytes kept of a headline
)

// Input limits. A log, even endless input such as /dev/zero, is read as a
// stream in bounded memory; past one of these the parse stops with an
// error wrapping ErrTooLarge (umtrace exits 3) instead of reading on.
const (
	// MaxLineBytes bounds a text line: a line longer than maxLineLen is
	// cut (a warning) and the rest of it skipped, up to this many bytes
	// without a line break. It also bounds an XML token or top-level
	// element (a record) of compute-sanitizer XML.
	MaxLineBytes = 64 << 20
	// MaxInputBytes bounds a whole log, text or XML.
	MaxInputBytes = 8 << 30
)

// limits are the input limits a parse keeps: MaxLineBytes and
// MaxInputBytes (tests lower them).
type limits struct{ line, input int64 }

// maxLimits are the limits of Parse, ParseText and ParseXML.
func maxLimits() limits { return limits{line: MaxLineBytes, input: MaxInputBytes} }

// ErrTooLarge is wrapped by the error of a log past an input limit.
var ErrTooLarge = errors.New("sanitizer log over an input limit")

// LimitError is a log going past an input limit: What says which, with
// the limit ("more than 8 GiB of input").
type LimitError struct{ What string }

func (e *LimitError) Error() string        { return e.What }
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// size formats a limit in bytes as "64 MiB", "8 GiB" or "1000 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// capReader counts the bytes read from r and fails the read past max
// in all or, when span > 0, past span bytes after mark (XML: the offset
// of the last token the parser finished).
type capReader struct {
	r          io.Reader
	n, max     int64
	mark, span int64
	spanWhat   string
}

func newCapReader(r io.Reader, max int64) *capReader { return &capReader{r: r, max: max} }

func (c *capReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.span > 0 && c.n-c.mark >= c.span {
		return 0, &LimitError{fmt.Sprintf("%s longer than %s", c.spanWhat, size(c.span))}
	}
	if c.n >= c.max {
		// Exactly max bytes is fine; one more is not.
		var b [1]byte
		if k, err := c.r.Read(b[:]); k == 0 && err != nil {
			return 0, err
		}
		return 0, &LimitError{fmt.Sprintf("more than %s of input", size(c.max))}
	}
	if rest := c.max - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	if c.span > 0 {
		if rest := c.span - (c.n - c.mark); int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// ErrNotSanitizerLog is returned (wrapped) for input that has no
// compute-sanitizer or cuda-memcheck line and is not sanitizer XML.
var ErrNotSanitizerLog = errors.New("not a compute-sanitizer or cuda-memcheck log")

// SyntaxError is a problem at one line of a log. Parsers report most of them
// as Log.Warnings and go on.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Dim3 is a CUDA thread or block index.
type Dim3 struct{ X, Y, Z int32 }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// Finding is one record of a sanitizer log. Optional numbers come with a Has
// flag; strings are empty when unknown.
type Finding struct {
	LogLine  int    // 1-based line where the record starts
	Tool     string // ToolMemcheck, ...
	Severity string // SevError, SevWarning, SevInfo
	Kind     string // KindInvalidAccess, ...
	Message  string // headline as printed

	Kernel     string // device function as printed (text: with parameters; XML: as given, often the bare name)
	KernelBase string // BaseName(Kernel)
	File       string // source file, as printed
	Line       int    // source line, 0 when unknown
	PC         uint64
	HasPC      bool

	Thread, Block Dim3
	HasThread     bool // Thread and Block are set

	Address    uint64
	HasAddress bool
	Size       int64 // access size in bytes
	HasSize    bool
	Space      string // global, shared, local, generic, ...
	Access     string // read, write, atomic, ...
	Detail     string // out of bounds, WAW hazard, Divergent thread(s) in warp, ...

	Hazards    int64 // racecheck: hazards in this record
	HasHazards bool
	RaceWith   []RaceAccess // racecheck: the other accesses

	API       string // CUDA API call
	APIError  string // cudaErrorLaunchFailure
	APIResult int32  // 719
	HasResult bool

	LeakBytes    int64
	HasLeak      bool
	AllocAddress uint64 // nearest allocation (memcheck out-of-bounds)
	AllocSize    int64
	HasAlloc     bool

	HostFrames   []string // innermost first, as printed (XML: "func [0xpc] in module")
	DeviceFrames []string
}

// Location is "file:line", "file", or "" when the log gives no source line.
func (f *Finding) Location() string {
	switch {
	case f.File == "":
		return ""
	case f.Line > 0:
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// MatchesKernel reports whether the finding's kernel is name, comparing base
// names, so a demangled trace name ("void foo<int>(float*)"), a short name
// ("foo") and a mangled one ("_Z3fooIiEvPf") all match a finding in foo.
func (f *Finding) MatchesKernel(name string) bool {
	return f.KernelBase != "" && f.KernelBase == BaseName(name)
}

// RaceAccess is the other access of a racecheck record.
type RaceAccess struct {
	Access     string // read, write, atomic
	Kernel     string // as printed
	File       string
	Line       int
	PC         uint64
	HasPC      bool
	Thread     Dim3 // legacy racecheck only
	HasThread  bool
	Hazards    int64
	HasHazards bool
}

// Where is "FILE:LINE" when known, else "KERNELBASE+0xPC", else the kernel.
func (a *RaceAccess) Where() string {
	switch {
	case a.File != "" && a.Line > 0:
		return fmt.Sprintf("%s:%d", a.File, a.Line)
	case a.HasPC:
		return fmt.Sprintf("%s+%#x", BaseName(a.Kernel), a.PC)
	}
	return BaseName(a.Kernel)
}

// String is "write at shared_race+0x1f0 (bugs.cu:10) [4096 hazards]".
func (a *RaceAccess) String() string {
	var b strings.Builder
	b.WriteString(a.Access)
	if a.HasThread {
		b.WriteString(" by thread " + a.Thread.String())
	}
	b.WriteString(" at " + BaseName(a.Kernel))
	if a.HasPC {
		fmt.Fprintf(&b, "+%#x", a.PC)
	}
	if a.File != "" {
		b.WriteString(" (" + a.File)
		if a.Line > 0 {
			fmt.Fprintf(&b, ":%d", a.Line)
		}
		b.WriteString(")")
	}
	if a.HasHazards {
		fmt.Fprintf(&b, " [%d hazards]", a.Hazards)
	}
	return b.String()
}

// Summary holds the tool's own summary lines. XML output has none.
type Summary struct {
	HasErrors  bool  // an "ERROR SUMMARY: N errors" line was seen
	Errors     int64 // errors the tool counted, printed or not
	NotPrinted int64 // "ERROR SUMMARY: N errors were not printed"

	HasLeaks        bool // a "LEAK SUMMARY" line was seen
	LeakBytes       int64
	LeakAllocations int64

	HasRace      bool // a "RACECHECK SUMMARY" line was seen
	RaceRecords  int64
	RaceErrors   int64
	RaceWarnings int64
}

// Log is one parsed sanitizer log.
type Log struct {
	Path     string
	Format   string // "text" or "xml"
	Driver   string // "compute-sanitizer", "cuda-memcheck" (from the banner), or ""
	Tool     string // the tool that wrote the log, inferred from its findings and summaries
	Findings []Finding
	Summary  Summary
	Warnings []*SyntaxError // problems that did not stop the parse, in line order
	Lines    int            // lines read (text) or last line reached (XML)
}

// Counts returns the number of findings of each kind.
func (l *Log) Counts() map[string]int {
	m := map[string]int{}
	for i := range l.Findings {
		m[l.Findings[i].Kind]++
	}
	return m
}

// Errors is the number of findings with severity error.
func (l *Log) Errors() int {
	n := 0
	for i := range l.Findings {
		if l.Findings[i].Severity == SevError {
			n++
		}
	}
	return n
}

func (l *Log) warn(line int, format string, a ...any) {
	switch {
	case len(l.Warnings) < maxWarnings:
		l.Warnings = append(l.Warnings, &SyntaxError{File: l.Path, Line: line, Msg: fmt.Sprintf(format, a...)})
	case len(l.Warnings) == maxWarnings:
		l.Warnings = append(l.Warnings, &SyntaxError{File: l.Path, Line: line, Msg: "too many warnings; dropping the rest"})
	}
}

// ParseFile reads the log at path, text or XML (detected from its content).
// Errors name the file; a file without any sanitizer line wraps
// ErrNotSanitizerLog.
func ParseFile(path string) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := Parse(f, path)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return l, nil
}

// Parse reads a text or XML log from r; name is used in warnings.
func Parse(r io.Reader, name string) (*Log, error) { return parse(r, name, maxLimits()) }

func parse(r io.Reader, name string, lim limits) (*Log, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(512)
	if isXML(head) {
		return parseXML(br, name, lim)
	}
	return parseText(br, name, lim)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func isXML(head []byte) bool {
	head = bytes.TrimPrefix(head, utf8BOM)
	head = bytes.TrimLeft(head, " \t\r\n")
	return bytes.HasPrefix(head, []byte("<?xml")) || bytes.HasPrefix(head, []byte("<ComputeSanitizerOutput"))
}

// finish fills tool fields once all findings are known.
func (l *Log) finish() {
	tools := map[string]bool{}
	for i := range l.Findings {
		if t := kindTool(l.Findings[i].Kind); t != "" {
			tools[t] = true
		}
	}
	switch {
	case len(tools) == 1:
		for t := range tools {
			l.Tool = t
		}
	case len(tools) > 1:
		// Mixed logs do not occur from one run; take the first finding's.
		for i := range l.Findings {
			if t := kindTool(l.Findings[i].Kind); t != "" {
				l.Tool = t
				break
			}
		}
	case l.Summary.HasRace:
		l.Tool = ToolRacecheck
	default:
		l.Tool = ToolMemcheck // the default tool of both drivers
	}
	for i := range l.Findings {
		f := &l.Findings[i]
		if f.Tool = kindTool(f.Kind); f.Tool == "" {
			f.Tool = l.Tool
		}
		f.KernelBase = BaseName(f.Kernel)
	}
}

func kindTool(kind string) string {
	switch kind {
	case KindInvalidAccess, KindHardwareException, KindMallocFree, KindLeak:
		return ToolMemcheck
	case KindRace, KindHazardLimit:
		return ToolRacecheck
	case KindUninitialized, KindUnusedMemory:
		return ToolInitcheck
	case KindBarrierError:
		return ToolSynccheck
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// BaseName returns a kernel's base name (see ingest.KernelBaseName).
func BaseName(name string) string { return ingest.KernelBaseName(name) }
