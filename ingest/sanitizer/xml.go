package sanitizer

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

type xmlDim3 struct {
	X string `xml:"x"`
	Y string `xml:"y"`
	Z string `xml:"z"`
}

type xmlWhere struct {
	Func string `xml:"func"`
	Path string `xml:"path"`
	Line string `xml:"line"`
	PC   string `xml:"pc"`
}

type xmlAccess struct {
	Direction string    `xml:"direction"`
	Where     *xmlWhere `xml:"where"`
	Count     string    `xml:"count"`
}

type xmlFrame struct {
	Func   string `xml:"func"`
	PC     string `xml:"pc"`
	Module string `xml:"module"`
}

type xmlRecord struct {
	Kind  string `xml:"kind"`
	Level string `xml:"level"`
	Who   *struct {
		Thread *xmlDim3 `xml:"threadIdx"`
		Block  *xmlDim3 `xml:"blockIdx"`
	} `xml:"who"`
	What struct {
		Text        string      `xml:"text"`
		Space       string      `xml:"space"`
		Size        string      `xml:"size"`
		Direction   string      `xml:"direction"`
		Error       string      `xml:"error"`
		Address     string      `xml:"address"`
		API         string      `xml:"api"`
		Message     string      `xml:"message"`
		Result      string      `xml:"result"`
		Type        string      `xml:"type"`
		Source      *xmlAccess  `xml:"source"`
		Destination []xmlAccess `xml:"destination"`
	} `xml:"what"`
	Where     *xmlWhere `xml:"where"`
	HostStack *struct {
		Frames []xmlFrame `xml:"frame"`
	} `xml:"hostStack"`
}

// ParseXML reads compute-sanitizer XML (--xml --save FILE) from r. It gives
// the same findings as the text output of the same run, except that XML has
// no summary lines and keeps every host frame. A log cut short or otherwise
// malformed after its first record keeps the records read so far and adds a
// warning; one that is malformed before any record is an error. Input past
// MaxInputBytes, or a token or top-level element (record) longer than
// MaxLineBytes, is an error wrapping ErrTooLarge.
func ParseXML(r io.Reader, name string) (*Log, error) {
	l := &Log{Path: name, Format: "xml", Driver: "compute-sanitizer"}
	cr := newCapReader(r)
	cr.span, cr.spanWhat = maxLine, "an XML token or element"
	d := xml.NewDecoder(cr)
	d.Strict = true
	sawRoot := false
	depth := 0
loop:
	for {
		cr.mark = cr.n
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		line, _ := d.InputPos()
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if err != nil {
			if !sawRoot {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			l.warn(line, "XML cut short or malformed: %v", err)
			break loop
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				if t.Name.Local != "ComputeSanitizerOutput" {
					return nil, fmt.Errorf("line %d: root element <%s>: %w", line, t.Name.Local, ErrNotSanitizerLog)
				}
				sawRoot = true
				continue
			}
			if depth != 2 {
				continue
			}
			if t.Name.Local != "record" {
				if err := d.Skip(); err != nil {
					if errors.Is(err, ErrTooLarge) {
						return nil, fmt.Errorf("line %d: %w", line, err)
					}
					l.warn(line, "XML cut short or malformed: %v", err)
					break loop
				}
				depth--
				continue
			}
			var rec xmlRecord
			if err := d.DecodeElement(&rec, &t); err != nil {
				if errors.Is(err, ErrTooLarge) {
					return nil, fmt.Errorf("line %d: %w", line, err)
				}
				l.warn(line, "XML record cut short or malformed: %v", err)
				break loop
			}
			depth--
			l.xmlRecord(line, &rec)
		case xml.EndElement:
			depth--
		}
	}
	l.Lines, _ = d.InputPos()
	if !sawRoot {
		return nil, ErrNotSanitizerLog
	}
	l.finish()
	return l, nil
}

func (l *Log) xmlRecord(line int, rec *xmlRecord) {
	w := &rec.What
	x := xmlFields{l, line}
	f := Finding{LogLine: line, Severity: SevError, Message: clip(strings.TrimSpace(w.Text), maxMessage)}
	if rec.Level != "" {
		f.Severity = severity(rec.Level)
	}
	if rec.Who != nil {
		th, ok1 := x.dim(rec.Who.Thread)
		bl, ok2 := x.dim(rec.Who.Block)
		f.Thread, f.Block, f.HasThread = th, bl, ok1 && ok2
	}
	x.where(&f, rec.Where)
	f.Address, f.HasAddress = x.hex(w.Address, "address")
	if v, ok := x.num(w.Size, "size"); ok {
		f.Size, f.HasSize = v, true
	}
	if w.Space != "" {
		f.Space = space(w.Space)
	}
	f.Access = strings.ToLower(strings.TrimSpace(w.Direction))
	f.Detail = strings.TrimSpace(w.Error)
	x.kind(&f, rec)
	if rec.HostStack != nil {
		for i, fr := range rec.HostStack.Frames {
			if i == maxFrames {
				f.HostFrames = append(f.HostFrames, "...")
				break
			}
			f.HostFrames = append(f.HostFrames, clip(xmlFrameString(fr), maxMessage))
		}
	}
	l.Findings = append(l.Findings, f)
}

// xmlFields reads the fields of the record at a line of the log, warning
// about values it cannot parse.
type xmlFields struct {
	l    *Log
	line int
}

func (x xmlFields) num(s, what string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	v, ok := parseCount(s)
	if !ok {
		x.l.warn(x.line, "bad %s %q", what, clip(s, 60))
	}
	return v, ok
}

func (x xmlFields) hex(s, what string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	v, ok := parseHex(s)
	if !ok {
		x.l.warn(x.line, "bad %s %q", what, clip(s, 60))
	}
	return v, ok
}

func (x xmlFields) dim(d *xmlDim3) (Dim3, bool) {
	if d == nil {
		return Dim3{}, false
	}
	vx, ok1 := x.num(d.X, "index")
	vy, ok2 := x.num(d.Y, "index")
	vz, ok3 := x.num(d.Z, "index")
	return Dim3{int32(vx), int32(vy), int32(vz)}, ok1 && ok2 && ok3
}

// where reads a source location into f.
func (x xmlFields) where(f *Finding, wh *xmlWhere) {
	if wh == nil {
		return
	}
	f.Kernel = clip(strings.TrimSpace(wh.Func), maxMessage)
	f.File = clip(strings.TrimSpace(wh.Path), maxMessage)
	if n, ok := x.num(wh.Line, "line"); ok && n > 0 && n < 1<<31 {
		f.Line = int(n)
	}
	f.PC, f.HasPC = x.hex(wh.PC, "pc")
}

// kind sets f's kind, and the fields only some kinds have, from the
// record's kind.
func (x xmlFields) kind(f *Finding, rec *xmlRecord) {
	w := &rec.What
	switch rec.Kind {
	case "Precise", "Imprecise":
		f.Kind = KindInvalidAccess
		if m := reInvalid.FindStringSubmatch(f.Message); m != nil {
			if f.Space == "" {
				f.Space = space(m[1])
			}
			if f.Access == "" {
				f.Access = m[2]
			}
		} else if rec.Kind == "Imprecise" || reHardware.MatchString(f.Message) {
			f.Kind = KindHardwareException
		}
	case "Api":
		f.Kind = KindAPIError
		f.API, f.APIError, f.Detail = strings.TrimSpace(w.API), strings.TrimSpace(w.Error), strings.TrimSpace(w.Message)
		if v, ok := x.num(w.Result, "result"); ok && v < 1<<31 {
			f.APIResult, f.HasResult = int32(v), true
		}
	case "Leak":
		f.Kind = KindLeak
		f.LeakBytes, f.HasLeak = f.Size, f.HasSize
		f.Size, f.HasSize = 0, false
	case "Analysis", "Race", "Racecheck":
		f.Kind = KindRace
		if strings.Contains(f.Message, "Maximum number of hazards") {
			f.Kind = KindHazardLimit
			f.Severity = SevWarning
		}
		if s := w.Source; s != nil {
			f.Access = strings.ToLower(strings.TrimSpace(s.Direction))
			x.where(f, s.Where)
		}
		for i, d := range w.Destination {
			if n, ok := x.num(d.Count, "hazard count"); ok {
				f.Hazards += n
				f.HasHazards = true
			}
			if i < maxRaceWith {
				f.RaceWith = append(f.RaceWith, xmlPeer(&d, x.num, x.hex))
			}
		}
	case "Initcheck":
		f.Kind = KindUninitialized
		if m := reUninit.FindStringSubmatch(f.Message); m != nil {
			f.Space, f.Access = space(m[1]), m[2]
		} else if m := reUnused.FindStringSubmatch(f.Message); m != nil {
			f.Kind = KindUnusedMemory
		}
	case "Synccheck":
		f.Kind = KindBarrierError
		f.Detail = strings.TrimSpace(w.Type)
	default:
		x.l.warn(x.line, "unknown record kind %q", clip(rec.Kind, 60))
		f.Kind = KindOther
	}
}

// xmlFrameString formats a frame the way the text output does: "main
// [0x9329] in bugs".
func xmlFrameString(fr xmlFrame) string {
	var b strings.Builder
	if fn := strings.TrimSpace(fr.Func); fn != "" {
		b.WriteString(fn)
		b.WriteByte(' ')
	}
	b.WriteString("[" + strings.TrimSpace(fr.PC) + "]")
	if m := strings.TrimSpace(fr.Module); m != "" {
		b.WriteString(" in " + path.Base(m))
	}
	return b.String()
}

func xmlPeer(d *xmlAccess, num func(string, string) (int64, bool), hex func(string, string) (uint64, bool)) RaceAccess {
	a := RaceAccess{Access: strings.ToLower(strings.TrimSpace(d.Direction))}
	if w := d.Where; w != nil {
		a.Kernel = clip(strings.TrimSpace(w.Func), maxMessage)
		a.File = clip(strings.TrimSpace(w.Path), maxMessage)
		if n, ok := num(w.Line, "line"); ok && n > 0 && n < 1<<31 {
			a.Line = int(n)
		}
		a.PC, a.HasPC = hex(w.PC, "pc")
	}
	a.Hazards, a.HasHazards = num(d.Count, "hazard count")
	return a
}
