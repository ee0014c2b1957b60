package pqfile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// File is a Parquet file's footer, opened for reading whole columns.
// It reads flat schemas of the Types (files written by Writer, by
// arrow-go and by other writers of those types): PLAIN and dictionary
// encodings, data pages v1 and v2, uncompressed, Snappy, gzip or zstd.
type File struct {
	r       io.ReaderAt
	size    int64
	Columns []Column
	NumRows int64
	groups  []fileGroup
}

// Column is a column of a File.
type Column struct {
	Name     string
	Type     Type
	Nullable bool
	phys     int32
}

type fileGroup struct {
	rows   int64
	chunks []fileChunk
}

type fileChunk struct {
	codec             int32
	values            int64
	dataOff, dictOff  int64 // dictOff -1 without
	compSize, pathLen int64
}

// Values holds a column's values, all row groups in file order: Ints for
// int32, int64 and uint64 columns (uint64 as its bits), Floats, or
// Strings; Null[i] marks a null row (nil when none is), whose value is
// zero.
type Values struct {
	Ints    []int64
	Floats  []float64
	Strings []string
	Null    []bool
}

// maxFooter bounds the footer read into memory.
const maxFooter = 64 << 20

// Open reads the footer of the Parquet file r of size bytes.
func Open(r io.ReaderAt, size int64) (*File, error) {
	if size < 12 {
		return nil, errors.New("not a Parquet file: too short")
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	var head [4]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" || string(head[:]) != "PAR1" {
		return nil, errors.New("not a Parquet file: no PAR1 magic")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 || n > maxFooter {
		return nil, fmt.Errorf("parquet: footer of %d bytes in a file of %d", n, size)
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-8-n); err != nil {
		return nil, err
	}
	f := &File{r: r, size: size}
	if err := f.footer(buf); err != nil {
		return nil, fmt.Errorf("parquet: footer: %w", err)
	}
	return f, nil
}

// footer parses FileMetaData.
func (f *File) footer(b []byte) error {
	d := &decoder{b: b}
	var schema []schemaElem
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch id {
		case 2:
			var err error
			schema, err = readList(d, id, typ, func(d *decoder) (schemaElem, error) {
				var s schemaElem
				err := s.read(d)
				return s, err
			})
			return true, err
		case 3:
			v, err := d.varint()
			f.NumRows = v
			return true, err
		case 4:
			var err error
			f.groups, err = readList(d, id, typ, readGroup)
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if len(schema) == 0 || schema[0].children != len(schema)-1 {
		return errors.New("not a flat schema")
	}
	for _, s := range schema[1:] {
		if s.children != 0 || s.rep == 2 {
			return fmt.Errorf("column %s: nested and repeated columns are not supported", s.name)
		}
		f.Columns = append(f.Columns, Column{Name: s.name, Type: s.colType(), Nullable: s.rep == repOptional, phys: s.phys})
	}
	var rows int64
	for _, g := range f.groups {
		rows += g.rows
		if g.rows < 0 || rows > f.NumRows {
			return fmt.Errorf("row groups of more rows than the file's %d", f.NumRows)
		}
		if len(g.chunks) != len(f.Columns) {
			return fmt.Errorf("row group of %d columns, schema has %d", len(g.chunks), len(f.Columns))
		}
	}
	return nil
}

type schemaElem struct {
	name                 string
	phys, rep, conv      int32
	children             int
	logical              int16 // the LogicalType union's field: 1 STRING, 10 INTEGER
	intBits              int
	intSigned, hasSigned bool
}

func (s *schemaElem) read(d *decoder) error {
	s.phys, s.conv = -1, -1
	return d.fields(func(id int16, typ byte) (bool, error) {
		var err error
		switch id {
		case 1:
			s.phys, err = d.i32()
		case 3:
			s.rep, err = d.i32()
		case 4:
			var b []byte
			b, err = d.binary()
			s.name = string(b)
		case 5:
			var v int32
			v, err = d.i32()
			s.children = int(v)
		case 6:
			s.conv, err = d.i32()
		case 10:
			err = d.fields(func(id int16, typ byte) (bool, error) {
				s.logical = id
				if id != 10 {
					return false, nil
				}
				return true, d.fields(func(id int16, typ byte) (bool, error) {
					switch id {
					case 1:
						c, err := d.byte()
						s.intBits = int(int8(c))
						return true, err
					case 2:
						s.intSigned, s.hasSigned = typ == tBoolTrue, true
						return true, nil
					}
					return false, nil
				})
			})
		default:
			return false, nil
		}
		return true, err
	})
}

func (s *schemaElem) colType() Type {
	unsigned := s.conv == convUint64 || s.logical == 10 && s.hasSigned && !s.intSigned
	switch s.phys {
	case physInt32:
		if !unsigned {
			return Int32
		}
	case physInt64:
		if unsigned {
			return Uint64
		}
		if s.logical == 0 || s.logical == 10 {
			return Int64
		}
	case physDouble:
		return Float64
	case physByteArray:
		if s.conv == convUTF8 || s.logical == 1 {
			return String
		}
	}
	return Unsupported
}

func readGroup(d *decoder) (fileGroup, error) {
	var g fileGroup
	err := d.fields(func(id int16, typ byte) (bool, error) {
		switch id {
		case 1:
			var err error
			g.chunks, err = readList(d, id, typ, readChunk)
			return true, err
		case 3:
			v, err := d.varint()
			g.rows = v
			return true, err
		}
		return false, nil
	})
	return g, err
}

func readChunk(d *decoder) (fileChunk, error) {
	c := fileChunk{dictOff: -1, dataOff: -1}
	err := d.fields(func(id int16, typ byte) (bool, error) {
		if id == 1 {
			return true, errors.New("column chunks in other files are not supported")
		}
		if id != 3 {
			return false, nil
		}
		return true, d.fields(func(id int16, typ byte) (bool, error) {
			var err error
			switch id {
			case 3:
				var path [][]byte
				path, err = readList(d, id, typ, (*decoder).binary)
				c.pathLen = int64(len(path))
			case 4:
				c.codec, err = d.i32()
			case 5:
				c.values, err = d.varint()
			case 7:
				c.compSize, err = d.varint()
			case 9:
				c.dataOff, err = d.varint()
			case 11:
				c.dictOff, err = d.varint()
			default:
				return false, nil
			}
			return true, err
		})
	})
	if err == nil && c.pathLen != 1 {
		err = errors.New("nested column path")
	}
	return c, err
}

// readList reads field id, a list, each element with read.
func readList[T any](d *decoder, id int16, typ byte, read func(*decoder) (T, error)) ([]T, error) {
	if err := want(id, typ, tList); err != nil {
		return nil, err
	}
	_, n, err := d.listHeader()
	if err != nil {
		return nil, err
	}
	var out []T
	for range n {
		v, err := read(d)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Read returns column i's values.
func (f *File) Read(i int) (*Values, error) {
	c := f.Columns[i]
	if c.Type == Unsupported {
		return nil, fmt.Errorf("parquet: column %s: unsupported type", c.Name)
	}
	v := &Values{}
	for _, g := range f.groups {
		if g.chunks[i].values != g.rows {
			return nil, fmt.Errorf("parquet: column %s: %d values in a row group of %d rows", c.Name, g.chunks[i].values, g.rows)
		}
		if err := f.readChunk(c, g.chunks[i], v); err != nil {
			return nil, fmt.Errorf("parquet: column %s: %w", c.Name, err)
		}
	}
	return v, nil
}

// page is one decoded page's header.
type pageHeader struct {
	typ, size, compSize int32
	values, encoding    int32
	v2                  struct {
		nulls, defLen, repLen int32
		compressed            bool
	}
}

func (f *File) readChunk(c Column, ch fileChunk, v *Values) error {
	start := ch.dataOff
	if ch.dictOff >= 0 && ch.dictOff < start {
		start = ch.dictOff
	}
	if start < 4 || ch.compSize < 0 || start+ch.compSize > f.size-8 {
		return fmt.Errorf("chunk at %d of %d bytes is outside the file", start, ch.compSize)
	}
	buf := make([]byte, ch.compSize)
	if _, err := f.r.ReadAt(buf, start); err != nil {
		return err
	}
	var dict *Values
	var got int64
	for got < ch.values {
		if len(buf) == 0 {
			return fmt.Errorf("chunk ends after %d of %d values", got, ch.values)
		}
		d := &decoder{b: buf}
		h, err := readPageHeader(d)
		if err != nil {
			return err
		}
		buf = buf[d.off:]
		if h.compSize < 0 || int(h.compSize) > len(buf) || h.size < 0 {
			return errors.New("page runs past its chunk")
		}
		raw := buf[:h.compSize]
		buf = buf[h.compSize:]
		switch h.typ {
		case pageDict:
			body, err := decompress(ch.codec, raw, h.size)
			if err != nil {
				return err
			}
			dict = &Values{}
			if err := plainValues(dict, c, body, int(h.values)); err != nil {
				return fmt.Errorf("dictionary: %w", err)
			}
		case pageData, pageDataV2:
			if int64(h.values) > ch.values-got {
				return fmt.Errorf("page of %d values past the chunk's %d", h.values, ch.values)
			}
			n, err := f.dataPage(c, ch.codec, h, raw, dict, v)
			if err != nil {
				return err
			}
			got += int64(n)
		default:
			// index pages and others: skipped
		}
	}
	return nil
}

func readPageHeader(d *decoder) (pageHeader, error) {
	var h pageHeader
	h.v2.compressed = true
	err := d.fields(func(id int16, typ byte) (bool, error) {
		var err error
		switch id {
		case 1:
			h.typ, err = d.i32()
		case 2:
			h.size, err = d.i32()
		case 3:
			h.compSize, err = d.i32()
		case 5, 7, 8:
			v2 := id == 8
			err = d.fields(func(id int16, typ byte) (bool, error) {
				var err error
				switch {
				case id == 1:
					h.values, err = d.i32()
				case id == 2 && !v2:
					h.encoding, err = d.i32()
				case id == 2 && v2:
					h.v2.nulls, err = d.i32()
				case id == 4 && v2:
					h.encoding, err = d.i32()
				case id == 5 && v2:
					h.v2.defLen, err = d.i32()
				case id == 6 && v2:
					h.v2.repLen, err = d.i32()
				case id == 7 && v2:
					h.v2.compressed = typ == tBoolTrue
				default:
					return false, nil
				}
				return true, err
			})
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && h.values < 0 {
		err = errors.New("page of a negative number of values")
	}
	return h, err
}

// maxPage bounds a page's uncompressed size.
const maxPage = 1 << 30

func decompress(codec int32, b []byte, size int32) ([]byte, error) {
	switch codec {
	case codecUncompressed:
		return b, nil
	case codecSnappy:
		n, err := snappy.DecodedLen(b)
		if err != nil {
			return nil, err
		}
		if n != int(size) || n > maxPage {
			return nil, fmt.Errorf("page of %d bytes, header says %d", n, size)
		}
		return snappy.Decode(nil, b)
	case codecGzip, codecZstd:
		// Other tools' files (pyarrow, DuckDB, Spark can be set to
		// these); the header's size bounds what is inflated.
		if size < 0 || size > maxPage {
			return nil, fmt.Errorf("page of %d bytes", size)
		}
		var r io.Reader
		if codec == codecGzip {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			r = zr
		} else {
			zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(size)+1<<20))
			if err != nil {
				return nil, err
			}
			defer zr.Close()
			r = zr
		}
		// Grown as the data inflates, not made at the header's size.
		out, err := io.ReadAll(io.LimitReader(r, int64(size)+1))
		if err != nil {
			return nil, err
		}
		if len(out) != int(size) {
			return nil, fmt.Errorf("page of %d bytes, header says %d", len(out), size)
		}
		return out, nil
	}
	return nil, fmt.Errorf("compression codec %d is not supported", codec)
}

// dataPage decodes a data page into v and returns its number of values.
func (f *File) dataPage(c Column, codec int32, h pageHeader, raw []byte, dict *Values, v *Values) (int, error) {
	n := int(h.values)
	var defs, body []byte
	if h.typ == pageDataV2 {
		if h.v2.repLen != 0 {
			return 0, errors.New("repetition levels in a flat column")
		}
		if h.v2.defLen < 0 || int(h.v2.defLen) > len(raw) {
			return 0, errors.New("definition levels run past their page")
		}
		defs, raw = raw[:h.v2.defLen], raw[h.v2.defLen:]
		body = raw
		if h.v2.compressed {
			var err error
			if body, err = decompress(codec, raw, h.size-h.v2.defLen); err != nil {
				return 0, err
			}
		}
	} else {
		var err error
		if body, err = decompress(codec, raw, h.size); err != nil {
			return 0, err
		}
		if c.Nullable {
			if len(body) < 4 {
				return 0, errors.New("definition levels run past their page")
			}
			k := binary.LittleEndian.Uint32(body)
			if uint64(k) > uint64(len(body)-4) {
				return 0, errors.New("definition levels run past their page")
			}
			defs, body = body[4:4+k], body[4+k:]
		}
	}
	valid := n
	base := rows(v)
	if c.Nullable {
		levels, err := readRLE(nil, defs, 1, n)
		if err != nil {
			return 0, fmt.Errorf("definition levels: %w", err)
		}
		valid = 0
		for _, l := range levels {
			valid += int(l)
		}
		if v.Null == nil && valid < n {
			v.Null = make([]bool, base, base+n)
		}
		if v.Null != nil {
			for _, l := range levels {
				v.Null = append(v.Null, l == 0)
			}
		}
		defer func() { spread(v, c.Type, base, levels, valid) }()
	} else if v.Null != nil {
		v.Null = append(v.Null, make([]bool, n)...)
	}
	switch h.encoding {
	case encPlain:
		return n, plainValues(v, c, body, valid)
	case encPlainDict, encRLEDict:
		if dict == nil {
			return 0, errors.New("dictionary-encoded page without a dictionary")
		}
		if len(body) < 1 {
			return 0, errors.New("empty dictionary-encoded page")
		}
		idx, err := readRLE(nil, body[1:], int(body[0]), valid)
		if err != nil {
			return 0, fmt.Errorf("dictionary indices: %w", err)
		}
		nd := rows(dict)
		for _, k := range idx {
			if int(k) >= nd {
				return 0, fmt.Errorf("dictionary index %d of %d entries", k, nd)
			}
			switch c.Type {
			case String:
				v.Strings = append(v.Strings, dict.Strings[k])
			case Float64:
				v.Floats = append(v.Floats, dict.Floats[k])
			default:
				v.Ints = append(v.Ints, dict.Ints[k])
			}
		}
		return n, nil
	}
	return 0, fmt.Errorf("encoding %d is not supported", h.encoding)
}

func rows(v *Values) int { return len(v.Ints) + len(v.Floats) + len(v.Strings) }

// spread moves the valid values of a page of type t appended after base
// to their rows, with a zero value at each null row (levels: 1 valid, 0
// null).
func spread(v *Values, t Type, base int, levels []uint32, valid int) {
	if valid == len(levels) || rows(v) != base+valid {
		return
	}
	switch t {
	case String:
		v.Strings = spreadOf(v.Strings, base, levels, valid)
	case Float64:
		v.Floats = spreadOf(v.Floats, base, levels, valid)
	default:
		v.Ints = spreadOf(v.Ints, base, levels, valid)
	}
}

func spreadOf[T any](s []T, base int, levels []uint32, valid int) []T {
	var zero T
	s = append(s, make([]T, len(levels)-valid)...)
	src := base + valid - 1
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i] == 1 {
			s[base+i] = s[src]
			src--
		} else {
			s[base+i] = zero
		}
	}
	return s
}

// plainValues appends n PLAIN values of column c from b.
func plainValues(v *Values, c Column, b []byte, n int) error {
	le := binary.LittleEndian
	switch c.phys {
	case physInt32:
		if len(b) < 4*n {
			return io.ErrUnexpectedEOF
		}
		for i := range n {
			v.Ints = append(v.Ints, int64(int32(le.Uint32(b[4*i:]))))
		}
	case physInt64:
		if len(b) < 8*n {
			return io.ErrUnexpectedEOF
		}
		for i := range n {
			v.Ints = append(v.Ints, int64(le.Uint64(b[8*i:])))
		}
	case physDouble:
		if len(b) < 8*n {
			return io.ErrUnexpectedEOF
		}
		for i := range n {
			v.Floats = append(v.Floats, math.Float64frombits(le.Uint64(b[8*i:])))
		}
	case physByteArray:
		for range n {
			if len(b) < 4 {
				return io.ErrUnexpectedEOF
			}
			k := le.Uint32(b)
			if uint64(k) > uint64(len(b)-4) {
				return io.ErrUnexpectedEOF
			}
			v.Strings = append(v.Strings, string(b[4:4+k]))
			b = b[4+k:]
		}
	default:
		return fmt.Errorf("physical type %d is not supported", c.phys)
	}
	return nil
}
