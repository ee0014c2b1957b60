package sanitizer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// ParseText reads compute-sanitizer or cuda-memcheck text output from r.
// Lines without the sanitizer prefix ("========= " or "==PID== ") are the
// program's own output and are skipped. LF, CRLF and CR-only line endings
// are accepted. Problems that do not stop the parse (unknown lines, a log
// cut short) become l.Warnings; only a read error or input without a single
// sanitizer line is an error, and so is input past MaxLineBytes without a
// line break or past MaxInputBytes in all (wrapping ErrTooLarge).
func ParseText(r io.Reader, name string) (*Log, error) {
	p := &textParser{l: &Log{Path: name, Format: "text"}}
	sc := bufio.NewScanner(newCapReader(r))
	sc.Buffer(make([]byte, 0, 64<<10), maxLineLen+2)
	cut := 0
	var skipping bool // in the rest of cut line p.lineNo
	sc.Split(splitLines(&cut, &skipping, maxLine))
	for sc.Scan() {
		p.lineNo++
		b := sc.Bytes()
		if p.lineNo == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if cut > 0 {
			cut = 0
			p.l.warn(p.lineNo, "line longer than %d bytes cut", maxLineLen)
		}
		p.line(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	if err := sc.Err(); err != nil {
		if err == errLineTooLong {
			// The cut line is p.lineNo, read already.
			return nil, &LimitError{fmt.Sprintf("line %d longer than %s without a line break", p.lineNo, size(maxLine))}
		}
		line := p.lineNo + 1
		if skipping {
			line = p.lineNo
		}
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	p.l.Lines = p.lineNo
	if !p.sawPrefix {
		return nil, ErrNotSanitizerLog
	}
	p.end()
	return p.l, nil
}

// errLineTooLong is splitLines' error for a line longer than its limit.
var errLineTooLong = errors.New("line too long")

// splitLines splits on LF, CRLF and lone CR. A line longer than maxLineLen
// is returned cut, the rest of it skipped (*skipping is true meanwhile),
// and *cut set; one longer than limit is errLineTooLong.
func splitLines(cut *int, skipping *bool, limit int64) bufio.SplitFunc {
	var long int64 // bytes of the cut line so far
	return func(data []byte, atEOF bool) (int, []byte, error) {
		adv := 0
		if *skipping {
			i := bytes.IndexAny(data, "\r\n")
			if i < 0 {
				if long += int64(len(data)); long > limit {
					return 0, nil, errLineTooLong
				}
				return len(data), nil, nil
			}
			if long += int64(i); long > limit {
				return 0, nil, errLineTooLong
			}
			*skipping = false
			adv, data = i, data[i:]
			// data now starts with the line break of the cut line: swallow it.
			if data[0] == '\r' && len(data) == 1 && !atEOF {
				return adv, nil, nil
			}
			n := 1
			if data[0] == '\r' && len(data) > 1 && data[1] == '\n' {
				n = 2
			}
			return adv + n, nil, nil
		}
		if atEOF && len(data) == 0 {
			return 0, nil, nil
		}
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 || i >= maxLineLen {
			if len(data) >= maxLineLen {
				*cut = 1
				*skipping, long = true, maxLineLen
				return maxLineLen, data[:maxLineLen], nil
			}
			if atEOF {
				return len(data), data, nil
			}
			return 0, nil, nil
		}
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if !atEOF {
			return 0, nil, nil // CR at the end of the buffer: is an LF next?
		}
		return i + 1, data[:i], nil
	}
}

type textParser struct {
	l         *Log
	lineNo    int
	sawPrefix bool
	cur       *Finding
	sawBlank  bool // the last sanitizer line was an empty one
}

var pidPrefix = regexp.MustCompile(`^==\d{1,10}==(?: |$)`)

// body strips the sanitizer prefix. ok is false for program output.
func body(line string) (string, bool) {
	if strings.HasPrefix(line, "=========") {
		rest := line[len("========="):]
		if rest == "" || strings.TrimSpace(rest) == "" {
			return "", true
		}
		if rest[0] == ' ' {
			return rest[1:], true
		}
		return "", false
	}
	if loc := pidPrefix.FindStringIndex(line); loc != nil {
		return line[loc[1]:], true
	}
	return "", false
}

func (p *textParser) line(line string) {
	b, ok := body(line)
	if !ok {
		// Program output without a trailing newline can run into the next
		// sanitizer line: "done========= ERROR SUMMARY: 0 errors".
		i := strings.Index(line, "========= ")
		if i <= 0 {
			return
		}
		if b, ok = body(line[i:]); !ok || !recognized(strings.TrimSpace(b)) || strings.HasPrefix(b, " ") {
			return
		}
		p.l.warn(p.lineNo, "program output runs into a sanitizer line; reading it from column %d", i+1)
	}
	p.sawPrefix = true
	t := strings.TrimSpace(b)
	if t == "" {
		p.flush()
		p.sawBlank = true
		return
	}
	p.sawBlank = false
	if strings.HasPrefix(b, " ") || strings.HasPrefix(b, "\t") {
		p.detail(t)
		return
	}
	p.headline(t)
}

func (p *textParser) flush() {
	if p.cur != nil {
		p.l.Findings = append(p.l.Findings, *p.cur)
		p.cur = nil
	}
}

func (p *textParser) end() {
	if p.cur != nil {
		if !p.sawBlank {
			p.l.warn(p.lineNo, "log ends inside a record (cut short?)")
		}
		p.flush()
	}
	s := &p.l.Summary
	if !s.HasErrors && !s.HasRace {
		p.l.warn(p.lineNo, "no ERROR SUMMARY or RACECHECK SUMMARY line (log cut short?)")
	}
	p.l.finish()
	if s.HasErrors && p.l.Tool != ToolRacecheck {
		shown := int64(0)
		for i := range p.l.Findings {
			if p.l.Findings[i].Severity == SevError {
				shown++
			}
		}
		if shown+s.NotPrinted != s.Errors {
			p.l.warn(p.lineNo, "ERROR SUMMARY counts %d errors but the log shows %d (and %d not printed)", s.Errors, shown, s.NotPrinted)
		}
	}
	if s.HasRace {
		shown := int64(0)
		for i := range p.l.Findings {
			if p.l.Findings[i].Kind == KindRace {
				shown++
			}
		}
		if shown != s.RaceRecords {
			p.l.warn(p.lineNo, "RACECHECK SUMMARY counts %d hazards displayed but the log shows %d", s.RaceRecords, shown)
		}
	}
}

// Numbers: decimal with optional thousands separators ("4,000", "4.000",
// "4 000", "4'000"), or hex with 0x.
var countRe = regexp.MustCompile(`^(?:\d+|\d{1,3}(?:[,.' \x{a0}\x{202f}]\d{3})+)$`)

func parseCount(s string) (int64, bool) {
	if !countRe.MatchString(s) {
		return 0, false
	}
	s = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func parseHex(s string) (uint64, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

func parseDim3(s string) (Dim3, bool) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Dim3{}, false
	}
	var v [3]int32
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return Dim3{}, false
		}
		v[i] = int32(n)
	}
	return Dim3{v[0], v[1], v[2]}, true
}

const (
	hexRe = `0[xX][0-9a-fA-F]{1,16}`
	numRe = `\d[\d,.' \x{a0}\x{202f}]*?`
)

var (
	reErrorSummary = regexp.MustCompile(`^ERROR SUMMARY: (` + numRe + `) errors?(?: (were|was) not printed)?`)
	reLeakSummary  = regexp.MustCompile(`^LEAK SUMMARY: (` + numRe + `) bytes? leaked in (` + numRe + `) allocations?`)
	reRaceSummary  = regexp.MustCompile(`^RACECHECK SUMMARY: (` + numRe + `) hazards? displayed \((` + numRe + `) errors?, (` + numRe + `) warnings?\)`)

	reInvalid     = regexp.MustCompile(`^Invalid (\S+) (read|write|atomic|access)(?: of size (` + numRe + `)(?: bytes?)?)?(?: (.*))?$`)
	reUninit      = regexp.MustCompile(`^Uninitialized (\S+) memory (read|write|access)(?: of size (` + numRe + `)(?: bytes?)?)?`)
	reUnused      = regexp.MustCompile(`^Unused memory in allocation (` + hexRe + `) of size (` + numRe + `) bytes?`)
	reAPI         = regexp.MustCompile(`^Program hit (?:(\S+) \(error (\d+)\)|error (\d+))(?: due to "(.*)")? on CUDA API call to ([^\s.]+)\.?`)
	reLeak        = regexp.MustCompile(`^Leaked (` + numRe + `) bytes?(?: at (` + hexRe + `))?`)
	reRace        = regexp.MustCompile(`^(Error|Warning|Info|ERROR|WARN|WARNING|INFO): ?Race reported between (\w+) access at (.*)$`)
	reLegacyRace  = regexp.MustCompile(`^(ERROR|WARN|WARNING|INFO|Error|Warning|Info)\s*:\s*(?:\(([^)]*)\)\s*)?Potential (\w+) hazard detected at (\S+) (` + hexRe + `)(?: in block \(([^)]*)\))?`)
	reHazardLimit = regexp.MustCompile(`^(?:Warning|WARN|WARNING): Maximum number of hazards reached`)
	reBarrier     = regexp.MustCompile(`^Barrier error detected\.?\s*(.*?)\.?$`)
	reMallocFree  = regexp.MustCompile(`^Malloc/Free [Ee]rror encountered\s*:?\s*(.*?)\.?$`)
	reHardware    = regexp.MustCompile(`^(?:Warp|Lane|Device|Block)? ?(?:Illegal|Misaligned|Out-of-range|Invalid PC|Hardware|MMU|Assert)|^(?:Invalid PC|Illegal Instruction|Misaligned|Out-of-range|Stack overflow|Cuda Exception)`)
	reHostAPIInit = regexp.MustCompile(`^Host API (?:uninitialized|uninitialised) memory access`)

	reAt          = regexp.MustCompile(`^at (.*)$`)
	reLocNew      = regexp.MustCompile(`^(.*)\+(` + hexRe + `)(?: in (.+?):(\d+))?$`)
	reLocOld      = regexp.MustCompile(`^(` + hexRe + `) in (.*)$`)
	reFileLine    = regexp.MustCompile(`^([^()<>\s][^()<>]*?):(\d+):(.+)$`)
	reBy          = regexp.MustCompile(`^by thread \(([^)]*)\) in block \(([^)]*)\)`)
	reAddress     = regexp.MustCompile(`^(?:Access (?:to|at)|Address|Uninitialized access at) (` + hexRe + `)\s*(.*)$`)
	reNearest     = regexp.MustCompile(`^and is (.*?)\s*(?:the )?nearest allocation at (` + hexRe + `) of size (` + numRe + `) bytes?`)
	rePeer        = regexp.MustCompile(`^and (\w+) access at (.*?)(?: \[(` + numRe + `) hazards?\])?$`)
	reLegacyPeer  = regexp.MustCompile(`^(\w+) Thread \(([^)]*)\) at (.*)$`)
	reHazards     = regexp.MustCompile(`^(.*?) \[(` + numRe + `) hazards?\]$`)
	reAccessByAPI = regexp.MustCompile(`on access by (\w+)`)
)

// toolLines are headlines that carry no finding.
var quietHeadlines = []string{
	"This tool is deprecated", "Please use the compute-sanitizer", "Please use compute-sanitizer",
	"Tool is deprecated", "Note:", "NOTE:",
}

// toolMessages are headlines about the run rather than the program's bugs.
var toolMessages = []string{
	"Error: process didn't terminate successfully", "Target application returned an error",
	"Internal ", "No CUDA-MEMCHECK results found", "The application may have hit an error",
	"Error: No attachable process", "Error: Target application", "Error: Could not", "Error: Unable",
	"Error: Device not supported", "Error: ",
}

// recognized reports whether t is a headline this parser knows.
func recognized(t string) bool {
	if t == "COMPUTE-SANITIZER" || t == "CUDA-MEMCHECK" {
		return true
	}
	for _, re := range []*regexp.Regexp{reErrorSummary, reLeakSummary, reRaceSummary, reInvalid, reUninit,
		reUnused, reAPI, reLeak, reRace, reLegacyRace, reHazardLimit, reBarrier, reMallocFree, reHostAPIInit} {
		if re.MatchString(t) {
			return true
		}
	}
	return false
}

func (p *textParser) count(s, what string) int64 {
	v, ok := parseCount(strings.TrimSpace(s))
	if !ok {
		p.l.warn(p.lineNo, "bad %s %q", what, s)
	}
	return v
}

func (p *textParser) start(kind, sev, msg string) *Finding {
	p.flush()
	p.cur = &Finding{LogLine: p.lineNo, Kind: kind, Severity: sev, Message: clip(msg, maxMessage)}
	return p.cur
}

func severity(word string) string {
	switch strings.ToLower(word) {
	case "warning", "warn":
		return SevWarning
	case "info":
		return SevInfo
	}
	return SevError
}

func space(s string) string { return strings.Trim(s, "_") }

func (p *textParser) headline(t string) {
	if p.summaryLine(t) || p.memoryRecord(t) || p.otherRecord(t) {
		return
	}
	p.l.warn(p.lineNo, "unrecognized record %q", clip(t, 120))
	p.start(KindOther, SevError, t)
}

// summaryLine reads the tool's banner and summary lines; it reports
// whether t was one.
func (p *textParser) summaryLine(t string) bool {
	s := &p.l.Summary
	switch {
	case t == "COMPUTE-SANITIZER":
		p.flush()
		p.l.Driver = "compute-sanitizer"
		return true
	case t == "CUDA-MEMCHECK":
		p.flush()
		p.l.Driver = "cuda-memcheck"
		return true
	}
	if m := reErrorSummary.FindStringSubmatch(t); m != nil {
		p.flush()
		if m[2] != "" {
			s.NotPrinted = p.count(m[1], "error count")
		} else {
			s.HasErrors = true
			s.Errors = p.count(m[1], "error count")
		}
		return true
	}
	if m := reLeakSummary.FindStringSubmatch(t); m != nil {
		p.flush()
		s.HasLeaks = true
		s.LeakBytes = p.count(m[1], "byte count")
		s.LeakAllocations = p.count(m[2], "allocation count")
		return true
	}
	if m := reRaceSummary.FindStringSubmatch(t); m != nil {
		p.flush()
		s.HasRace = true
		s.RaceRecords = p.count(m[1], "hazard count")
		s.RaceErrors = p.count(m[2], "error count")
		s.RaceWarnings = p.count(m[3], "warning count")
		return true
	}
	return false
}

// memoryRecord starts a finding of memcheck's (invalid access,
// uninitialized memory, unused memory, API error, leak); it reports
// whether t was one.
func (p *textParser) memoryRecord(t string) bool {
	if m := reInvalid.FindStringSubmatch(t); m != nil {
		f := p.start(KindInvalidAccess, SevError, t)
		f.Space, f.Access = space(m[1]), m[2]
		if m[3] != "" {
			f.Size, f.HasSize = p.count(m[3], "access size"), true
		}
		f.Detail = strings.TrimPrefix(strings.TrimSpace(m[4]), "is ")
		return true
	}
	if m := reUninit.FindStringSubmatch(t); m != nil {
		f := p.start(KindUninitialized, SevError, t)
		f.Space, f.Access = space(m[1]), m[2]
		if m[3] != "" {
			f.Size, f.HasSize = p.count(m[3], "access size"), true
		}
		return true
	}
	if reHostAPIInit.MatchString(t) {
		p.start(KindUninitialized, SevError, t)
		return true
	}
	if m := reUnused.FindStringSubmatch(t); m != nil {
		f := p.start(KindUnusedMemory, SevError, t)
		f.AllocAddress, _ = parseHex(m[1])
		f.AllocSize, f.HasAlloc = p.count(m[2], "allocation size"), true
		return true
	}
	if m := reAPI.FindStringSubmatch(t); m != nil {
		f := p.start(KindAPIError, SevError, t)
		f.APIError, f.API, f.Detail = m[1], m[5], m[4]
		res := m[2]
		if res == "" {
			res = m[3]
		}
		if v, err := strconv.ParseInt(res, 10, 32); err == nil {
			f.APIResult, f.HasResult = int32(v), true
		}
		return true
	}
	if m := reLeak.FindStringSubmatch(t); m != nil {
		f := p.start(KindLeak, SevError, t)
		f.LeakBytes, f.HasLeak = p.count(m[1], "leak size"), true
		if m[2] != "" {
			f.Address, f.HasAddress = parseHex(m[2])
		}
		return true
	}
	return false
}

// otherRecord starts a finding of racecheck's or synccheck's, a tool
// message, or ends the current one on a line that carries none; it
// reports whether t was one of those.
func (p *textParser) otherRecord(t string) bool {
	if m := reRace.FindStringSubmatch(t); m != nil {
		f := p.start(KindRace, severity(m[1]), t)
		f.Access = strings.ToLower(m[2])
		loc := m[3]
		if mm := reHazards.FindStringSubmatch(loc); mm != nil {
			loc = mm[1]
			f.Hazards, f.HasHazards = p.count(mm[2], "hazard count"), true
		}
		p.setLoc(f, loc)
		return true
	}
	if m := reLegacyRace.FindStringSubmatch(t); m != nil {
		f := p.start(KindRace, severity(m[1]), t)
		f.Detail = m[3] + " hazard"
		if m[2] != "" {
			f.Detail += " (" + m[2] + ")"
		}
		f.Space = space(m[4])
		f.Address, f.HasAddress = parseHex(m[5])
		if m[6] != "" {
			f.Block, _ = parseDim3(m[6])
		}
		f.Hazards, f.HasHazards = 1, true
		return true
	}
	if reHazardLimit.MatchString(t) {
		p.start(KindHazardLimit, SevWarning, t)
		return true
	}
	if m := reBarrier.FindStringSubmatch(t); m != nil {
		f := p.start(KindBarrierError, SevError, t)
		f.Detail = m[1]
		return true
	}
	if m := reMallocFree.FindStringSubmatch(t); m != nil {
		f := p.start(KindMallocFree, SevError, t)
		f.Detail = m[1]
		return true
	}
	if reHardware.MatchString(t) {
		p.start(KindHardwareException, SevError, t)
		return true
	}
	for _, q := range quietHeadlines {
		if strings.HasPrefix(t, q) {
			p.flush()
			return true
		}
	}
	for _, q := range toolMessages {
		if strings.HasPrefix(t, q) {
			p.start(KindToolMessage, SevInfo, t)
			return true
		}
	}
	return false
}

// setLoc reads "KERNEL+0xPC in FILE:LINE", "KERNEL+0xPC", "0xPC in
// FILE:LINE:KERNEL" or "0xPC in KERNEL" into f.
func (p *textParser) setLoc(f *Finding, s string) {
	k, file, line, pc, ok := parseLoc(s)
	if !ok {
		p.l.warn(p.lineNo, "unrecognized location %q", clip(s, 120))
	}
	f.Kernel, f.File = clip(k, maxMessage), file
	if line > 0 {
		f.Line = line
	}
	if ok && pc != nil {
		f.PC, f.HasPC = *pc, true
	}
}

func parseLoc(s string) (kernel, file string, line int, pc *uint64, ok bool) {
	s = strings.TrimSpace(s)
	if m := reLocOld.FindStringSubmatch(s); m != nil {
		v, _ := parseHex(m[1])
		rest := m[2]
		if fm := reFileLine.FindStringSubmatch(rest); fm != nil {
			n, _ := strconv.Atoi(fm[2])
			return fm[3], fm[1], n, &v, true
		}
		return rest, "", 0, &v, true
	}
	if m := reLocNew.FindStringSubmatch(s); m != nil {
		v, _ := parseHex(m[2])
		n, _ := strconv.Atoi(m[4])
		return m[1], m[3], n, &v, true
	}
	if fm := reFileLine.FindStringSubmatch(s); fm != nil {
		n, _ := strconv.Atoi(fm[2])
		return fm[3], fm[1], n, nil, true
	}
	return s, "", 0, nil, false
}

func (p *textParser) detail(t string) {
	f := p.cur
	if f == nil {
		p.l.warn(p.lineNo, "detail line outside a record: %q", clip(t, 120))
		return
	}
	switch {
	case strings.HasPrefix(t, "Host Frame:"):
		if len(f.HostFrames) < maxFrames {
			f.HostFrames = append(f.HostFrames, clip(strings.TrimSpace(t[len("Host Frame:"):]), maxMessage))
		} else if len(f.HostFrames) == maxFrames {
			p.l.warn(p.lineNo, "more than %d host frames; dropping the rest", maxFrames)
			f.HostFrames = append(f.HostFrames, "...")
		}
		return
	case strings.HasPrefix(t, "Device Frame:"):
		if len(f.DeviceFrames) < maxFrames {
			f.DeviceFrames = append(f.DeviceFrames, clip(strings.TrimSpace(t[len("Device Frame:"):]), maxMessage))
		} else if len(f.DeviceFrames) == maxFrames {
			p.l.warn(p.lineNo, "more than %d device frames; dropping the rest", maxFrames)
			f.DeviceFrames = append(f.DeviceFrames, "...")
		}
		return
	case strings.HasPrefix(t, "Saved host backtrace"):
		return
	}
	if m := reAt.FindStringSubmatch(t); m != nil && f.Kernel == "" && !f.HasPC {
		p.setLoc(f, m[1])
		return
	}
	if m := reBy.FindStringSubmatch(t); m != nil {
		th, ok1 := parseDim3(m[1])
		bl, ok2 := parseDim3(m[2])
		if !ok1 || !ok2 {
			p.l.warn(p.lineNo, "bad thread or block index in %q", clip(t, 120))
			return
		}
		f.Thread, f.Block, f.HasThread = th, bl, true
		return
	}
	if m := reAddress.FindStringSubmatch(t); m != nil {
		f.Address, f.HasAddress = parseHex(m[1])
		rest := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(m[2]), "is "), ".")
		if mm := reAccessByAPI.FindStringSubmatch(rest); mm != nil && f.API == "" {
			f.API = mm[1]
		}
		if rest != "" {
			f.Detail = joinDetail(f.Detail, rest)
		}
		return
	}
	if m := reNearest.FindStringSubmatch(t); m != nil {
		f.AllocAddress, _ = parseHex(m[2])
		f.AllocSize, f.HasAlloc = p.count(m[3], "allocation size"), true
		f.Detail = joinDetail(f.Detail, strings.TrimSpace(m[1])+" the nearest allocation")
		return
	}
	if m := rePeer.FindStringSubmatch(t); m != nil && f.Kind == KindRace {
		if m[3] != "" {
			f.Hazards += p.count(m[3], "hazard count")
			f.HasHazards = true
		}
		a := RaceAccess{Access: strings.ToLower(m[1])}
		if m[3] != "" {
			a.Hazards, a.HasHazards = p.count(m[3], "hazard count"), true
		}
		p.addPeer(f, a, m[2])
		return
	}
	if m := reLegacyPeer.FindStringSubmatch(t); m != nil && f.Kind == KindRace {
		if f.Access == "" {
			f.Access = strings.ToLower(m[1])
			f.Thread, _ = parseDim3(m[2])
			f.HasThread = true
			p.setLoc(f, m[3])
		} else {
			a := RaceAccess{Access: strings.ToLower(m[1])}
			a.Thread, a.HasThread = parseDim3(m[2])
			p.addPeer(f, a, m[3])
		}
		return
	}
	if strings.HasPrefix(t, "Current Value") || strings.HasPrefix(t, "Not written") ||
		strings.HasSuffix(t, "of allocation were unused.") || strings.HasPrefix(t, "Access was") ||
		strings.HasPrefix(t, "Address is") {
		f.Detail = joinDetail(f.Detail, t)
		return
	}
	p.l.warn(p.lineNo, "unrecognized detail line %q", clip(t, 120))
}

func (p *textParser) addPeer(f *Finding, a RaceAccess, loc string) {
	k, file, line, pc, ok := parseLoc(loc)
	if !ok {
		p.l.warn(p.lineNo, "unrecognized location %q", clip(loc, 120))
	}
	a.Kernel, a.File, a.Line = clip(k, maxMessage), clip(file, maxMessage), line
	if pc != nil {
		a.PC, a.HasPC = *pc, true
	}
	if len(f.RaceWith) < maxRaceWith {
		f.RaceWith = append(f.RaceWith, a)
	} else if len(f.RaceWith) == maxRaceWith {
		p.l.warn(p.lineNo, "more than %d racing accesses; dropping the rest", maxRaceWith)
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return clip(b, maxMessage)
	}
	if len(a) >= maxMessage {
		return a
	}
	return clip(a+"; "+b, maxMessage)
}
