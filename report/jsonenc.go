package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// encodeSorted writes v as indented JSON with the keys of every object
// sorted, streaming to w: a report for a trace with a hundred thousand
// steps is written without building it in memory (encoding/json orders
// keys by field declaration, and a generic round trip to sort them costs
// many times the output size). Scalars are formatted by encoding/json, so
// the bytes equal json.MarshalIndent of the same value with sorted keys.
// It supports what analyze.Result uses: structs (with embedded structs and
// omitempty), pointers, slices, string-keyed maps, strings, bools and
// numbers.
//
// It is the one JSON encoder of umtrace: every JSON output (analyze,
// diff, gate, batch, sanitizer) goes through EncodeJSON, and each
// top-level document carries a schema_version (docs/json.md).
func EncodeJSON(w io.Writer, v any) error { return encodeSorted(w, v) }

func encodeSorted(w io.Writer, v any) error {
	e := &encoder{w: w, b: make([]byte, 0, flushAt+4<<10)}
	e.value(reflect.ValueOf(v), 0)
	e.b = append(e.b, '\n')
	e.flush()
	return e.err
}

// encoder appends JSON to b and, with a w, hands b to w once it holds
// flushAt bytes (a block encoder of listBlocks has no w: its b is the
// block).
type encoder struct {
	w   io.Writer
	b   []byte
	err error
}

// flushAt is the size from which an encoder with a writer writes b out.
const flushAt = 64 << 10

// flush writes b to w (no-op without one).
func (e *encoder) flush() {
	if e.w == nil {
		return
	}
	if e.err == nil && len(e.b) > 0 {
		_, e.err = e.w.Write(e.b)
	}
	e.b = e.b[:0]
}

// spill flushes b if it holds flushAt bytes or more.
func (e *encoder) spill() {
	if len(e.b) >= flushAt {
		e.flush()
	}
}

// parallelElems is the list length from which value encodes a list in
// blocks, concurrently (listBlocks).
const parallelElems = 1 << 13

// blockElems is how many elements of a long list one block holds.
const blockElems = 512

// listBlocks writes the n elements of list v (n >= parallelElems; the
// opening bracket is written): a report's per-step rows (130k in a 12M-row
// trace, tens of MB of JSON) are encoded in blocks of blockElems elements
// by up to GOMAXPROCS workers (16 at most) and written in order: the same
// bytes as one encoder writes. A block is encoded into a buffer from a fixed set that
// the writer hands back once the block is written, so a long list takes a
// few blocks' worth of memory (docs/performance.md, "JSON lists in
// blocks"). Buffers are handed out in block order, before the block is,
// so the block the writer waits for always has one.
func (e *encoder) listBlocks(v reflect.Value, n, depth int) {
	type job struct {
		k   int
		buf []byte
	}
	type encoded struct {
		b   []byte
		err error
	}
	elem := encoderOf(v.Type().Elem())
	nb := (n + blockElems - 1) / blockElems
	workers := min(runtime.GOMAXPROCS(0), 16) // 2 buffers each, 0.1-0.5 MB a buffer
	free := make(chan []byte, 2*workers)
	for range cap(free) {
		free <- nil
	}
	out := make([]chan encoded, nb)
	for k := range out {
		out[k] = make(chan encoded, 1)
	}
	jobs := make(chan job)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(jobs)
		for k := 0; k < nb; k++ {
			j := job{k: k}
			select {
			case j.buf = <-free:
			case <-stop:
				return
			}
			select {
			case jobs <- j:
			case <-stop:
				return
			}
		}
	}()
	for range workers {
		go func() {
			for j := range jobs {
				e2 := &encoder{b: j.buf[:0]}
				e2.elems(v, j.k*blockElems, min(n, (j.k+1)*blockElems), depth, elem)
				out[j.k] <- encoded{e2.b, e2.err}
			}
		}()
	}
	for k := 0; k < nb; k++ {
		h := <-out[k]
		if e.err == nil {
			e.err = h.err
		}
		if e.err != nil {
			return // stop ends the dispatcher; the workers finish their blocks
		}
		if e.w == nil {
			e.b = append(e.b, h.b...)
		} else {
			e.flush()
			if e.err == nil {
				_, e.err = e.w.Write(h.b)
			}
		}
		free <- h.b
	}
}

// elems writes elements [from, to) of list v with enc, each after its
// separator.
func (e *encoder) elems(v reflect.Value, from, to, depth int, enc encFunc) {
	for i := from; i < to && e.err == nil; i++ {
		if i > 0 {
			e.raw(",")
		}
		e.newline(depth + 1)
		enc(e, v.Index(i), depth+1)
		e.spill()
	}
}

type field struct {
	name      string
	key       string // name as a JSON string and ": "
	index     []int
	omitEmpty bool
}

// of returns f's value in struct v (one Field call for a field that is
// not promoted from an embedded struct).
func (f *field) of(v reflect.Value) reflect.Value {
	if len(f.index) == 1 {
		return v.Field(f.index[0])
	}
	return v.FieldByIndex(f.index)
}

var fieldCache sync.Map // reflect.Type → []field

// fields lists t's JSON fields (promoting embedded structs' fields),
// sorted by name.
func fields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			idx := append(slices.Clone(index), i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			key, _ := json.Marshal(name)
			out = append(out, field{name: name, key: string(key) + ": ", index: idx, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
		}
	}
	walk(t, nil)
	slices.SortStableFunc(out, func(a, b field) int { return strings.Compare(a.name, b.name) })
	out = shadow(out)
	fieldCache.Store(t, out)
	return out
}

// shadow applies encoding/json's rule to fields of one name (fs sorted
// by name, stably): the shallowest wins, and a tie at that depth leaves
// none of them (every field here is tagged). A document type embeds a
// result and declares the fields it replaces (report/document.go).
func shadow(fs []field) []field {
	out := fs[:0]
	for i := 0; i < len(fs); {
		j := i
		for j < len(fs) && fs[j].name == fs[i].name {
			j++
		}
		best, n := i, 0
		for k := i; k < j; k++ {
			switch d := len(fs[k].index); {
			case d < len(fs[best].index):
				best, n = k, 1
			case d == len(fs[best].index):
				n++
			}
		}
		if n == 1 {
			out = append(out, fs[best])
		}
		i = j
	}
	return out
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

// indent is a newline and the indentation of the deepest level written.
var indent = "\n" + strings.Repeat("  ", 32)

func (e *encoder) newline(depth int) {
	if 1+2*depth <= len(indent) {
		e.raw(indent[:1+2*depth])
		return
	}
	e.raw("\n")
	e.raw(strings.Repeat("  ", depth))
}

func (e *encoder) scalar(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if e.err == nil {
			e.err = fmt.Errorf("encoding json: %w", err)
		}
		return
	}
	e.raw(string(b))
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// value writes v at depth, with the encoder compiled for its type.
func (e *encoder) value(v reflect.Value, depth int) {
	if !v.IsValid() {
		e.raw("null")
		return
	}
	encoderOf(v.Type())(e, v, depth)
}

// encFunc writes a value of one type at a depth.
type encFunc func(e *encoder, v reflect.Value, depth int)

var encCache sync.Map // reflect.Type → encFunc

// encoderOf returns the encoder of type t, made once per type: a field,
// element or key type's encoder is looked up when t's is made, not per
// value, which a report's hundreds of thousands of rows repeat. A type
// that contains itself gets, while its encoder is made, one that waits
// for it (as encoding/json's typeEncoder does).
func encoderOf(t reflect.Type) encFunc {
	if f, ok := encCache.Load(t); ok {
		return f.(encFunc)
	}
	var (
		wg sync.WaitGroup
		f  encFunc
	)
	wg.Add(1)
	fi, loaded := encCache.LoadOrStore(t, encFunc(func(e *encoder, v reflect.Value, depth int) {
		wg.Wait()
		f(e, v, depth)
	}))
	if loaded {
		return fi.(encFunc)
	}
	f = newEncoder(t)
	wg.Done()
	encCache.Store(t, f)
	return f
}

func newEncoder(t reflect.Type) encFunc {
	switch t.Kind() {
	case reflect.Pointer:
		elem := encoderOf(t.Elem())
		return func(e *encoder, v reflect.Value, depth int) {
			if v.IsNil() {
				e.raw("null")
				return
			}
			elem(e, v.Elem(), depth)
		}
	case reflect.Interface:
		return func(e *encoder, v reflect.Value, depth int) {
			if v.IsNil() {
				e.raw("null")
				return
			}
			e.value(v.Elem(), depth)
		}
	case reflect.Struct:
		return structEncoder(t)
	case reflect.Map:
		return mapEncoder(t)
	case reflect.Slice, reflect.Array:
		// A list is never null (a nil slice is written []), so
		// consumers and the schemas (docs/schema) need no null case.
		elem := encoderOf(t.Elem())
		return func(e *encoder, v reflect.Value, depth int) {
			n := v.Len()
			if n == 0 {
				e.raw("[]")
				return
			}
			e.raw("[")
			if n >= parallelElems {
				e.listBlocks(v, n, depth)
			} else {
				e.elems(v, 0, n, depth, elem)
			}
			e.newline(depth)
			e.raw("]")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(e *encoder, v reflect.Value, _ int) { e.b = strconv.AppendInt(e.b, v.Int(), 10) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(e *encoder, v reflect.Value, _ int) { e.b = strconv.AppendUint(e.b, v.Uint(), 10) }
	case reflect.Bool:
		return func(e *encoder, v reflect.Value, _ int) { e.b = strconv.AppendBool(e.b, v.Bool()) }
	case reflect.Float64:
		return func(e *encoder, v reflect.Value, _ int) { e.float(v.Float()) }
	case reflect.String:
		return func(e *encoder, v reflect.Value, _ int) { e.str(v.String()) }
	}
	return func(e *encoder, v reflect.Value, _ int) { e.scalar(v.Interface()) }
}

// structEncoder writes t's fields (fields: sorted, embedded ones
// promoted, omitempty ones left out when empty) as an object.
func structEncoder(t reflect.Type) encFunc {
	fs := fields(t)
	encs := make([]encFunc, len(fs))
	for i := range fs {
		encs[i] = encoderOf(t.FieldByIndex(fs[i].index).Type)
	}
	return func(e *encoder, v reflect.Value, depth int) {
		first := true
		for i := range fs {
			f := &fs[i]
			fv := f.of(v)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if first {
				e.raw("{")
				first = false
			} else {
				e.raw(",")
			}
			e.newline(depth + 1)
			e.raw(f.key)
			encs[i](e, fv, depth+1)
		}
		if first {
			e.raw("{}")
			return
		}
		e.newline(depth)
		e.raw("}")
	}
}

// mapEncoder writes a string-keyed map as an object in key order; an
// empty or nil map is {} (an object is never null).
func mapEncoder(t reflect.Type) encFunc {
	elem := encoderOf(t.Elem())
	return func(e *encoder, v reflect.Value, depth int) {
		if v.Len() == 0 {
			e.raw("{}")
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		e.raw("{")
		for i, k := range keys {
			if e.err != nil {
				return
			}
			if i > 0 {
				e.raw(",")
			}
			e.newline(depth + 1)
			e.scalar(k.String())
			e.raw(": ")
			elem(e, v.MapIndex(k), depth+1)
			e.spill()
		}
		e.newline(depth)
		e.raw("}")
	}
}

// float writes f as encoding/json does (TestEncodeSortedMatchesJSON).
func (e *encoder) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.scalar(f) // the same error encoding/json gives
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(e.b)
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if b := e.b[n:]; len(b) >= 4 {
			if k := len(b); b[k-4] == 'e' && b[k-3] == '-' && b[k-2] == '0' {
				b[k-2] = b[k-1]
				e.b = e.b[:len(e.b)-1]
			}
		}
	}
}

// str writes s as a JSON string; plain printable ASCII is written as is,
// anything else goes through encoding/json (which escapes <, > and &).
func (e *encoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e.scalar(s)
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}
