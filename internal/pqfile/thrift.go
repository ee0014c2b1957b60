package pqfile

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Parquet's footer and page headers are Thrift structs in the compact
// protocol (https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md).
// This file holds the subset Parquet uses: structs, i32, i64, binary,
// bool and lists of those.

// Compact protocol type ids.
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tDouble    = 7
	tBinary    = 8
	tList      = 9
	tSet       = 10
	tMap       = 11
	tStruct    = 12
)

// encoder appends a compact-protocol struct to b. Fields are written in
// increasing id order within a struct (begin/end nest them).
type encoder struct {
	b    []byte
	last []int16 // the last field id of each open struct
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) } // zigzag

func (e *encoder) field(id int16, typ byte) {
	top := &e.last[len(e.last)-1]
	if d := id - *top; d > 0 && d <= 15 {
		e.b = append(e.b, byte(d)<<4|typ)
	} else {
		e.b = append(e.b, typ)
		e.varint(int64(id))
	}
	*top = id
}

func (e *encoder) begin()                { e.last = append(e.last, 0) }
func (e *encoder) end()                  { e.b = append(e.b, 0); e.last = e.last[:len(e.last)-1] }
func (e *encoder) i32(id int16, v int32) { e.field(id, tI32); e.varint(int64(v)) }
func (e *encoder) i64(id int16, v int64) { e.field(id, tI64); e.varint(v) }
func (e *encoder) binary(id int16, v []byte) {
	e.field(id, tBinary)
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *encoder) str(id int16, v string) {
	e.field(id, tBinary)
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *encoder) structField(id int16) { e.field(id, tStruct); e.begin() }

func (e *encoder) bool(id int16, v bool) {
	if v {
		e.field(id, tBoolTrue)
	} else {
		e.field(id, tBoolFalse)
	}
}

// list writes a list header of n elements of type typ; the elements
// follow (struct elements each between begin and end).
func (e *encoder) list(id int16, typ byte, n int) {
	e.field(id, tList)
	if n < 15 {
		e.b = append(e.b, byte(n)<<4|typ)
		return
	}
	e.b = append(e.b, 0xf0|typ)
	e.uvarint(uint64(n))
}

// decoder reads compact-protocol values from b.
type decoder struct {
	b     []byte
	off   int
	depth int
}

var errShort = errors.New("thrift: truncated")

func (d *decoder) byte() (byte, error) {
	if d.off >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, errShort
	}
	d.off += n
	return v, nil
}

func (d *decoder) varint() (int64, error) {
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		return 0, errShort
	}
	d.off += n
	return v, nil
}

func (d *decoder) i32() (int32, error) {
	v, err := d.varint()
	if err == nil && int64(int32(v)) != v {
		err = fmt.Errorf("thrift: i32 out of range: %d", v)
	}
	return int32(v), err
}

func (d *decoder) binary() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)-d.off) {
		return nil, errShort
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v, nil
}

// listHeader returns a list's element type and length.
func (d *decoder) listHeader() (byte, int, error) {
	c, err := d.byte()
	if err != nil {
		return 0, 0, err
	}
	n := int(c >> 4)
	if n == 15 {
		u, err := d.uvarint()
		if err != nil {
			return 0, 0, err
		}
		if u > uint64(len(d.b)-d.off) { // every element takes a byte at least
			return 0, 0, errShort
		}
		n = int(u)
	}
	return c & 0x0f, n, nil
}

// fields reads a struct, calling fn for each field; fn reads the value
// of the fields it knows and returns false for the others, which are
// skipped. A boolean field's value is in its type (tBoolTrue, tBoolFalse).
func (d *decoder) fields(fn func(id int16, typ byte) (bool, error)) error {
	if d.depth++; d.depth > 64 {
		return errors.New("thrift: nested too deep")
	}
	defer func() { d.depth-- }()
	var last int16
	for {
		c, err := d.byte()
		if err != nil {
			return err
		}
		if c == 0 {
			return nil
		}
		typ := c & 0x0f
		id := last + int16(c>>4)
		if c>>4 == 0 {
			v, err := d.varint()
			if err != nil {
				return err
			}
			id = int16(v)
		}
		last = id
		known, err := fn(id, typ)
		if err != nil {
			return err
		}
		if !known {
			if err := d.skip(typ); err != nil {
				return err
			}
		}
	}
}

// skip reads past a value of type typ.
func (d *decoder) skip(typ byte) error {
	switch typ {
	case tBoolTrue, tBoolFalse:
		return nil
	case tByte:
		_, err := d.byte()
		return err
	case tI16, tI32, tI64:
		_, err := d.varint()
		return err
	case tDouble:
		if len(d.b)-d.off < 8 {
			return errShort
		}
		d.off += 8
		return nil
	case tBinary:
		_, err := d.binary()
		return err
	case tList, tSet:
		et, n, err := d.listHeader()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skipElem(et); err != nil {
				return err
			}
		}
		return nil
	case tMap:
		n, err := d.uvarint()
		if err != nil || n == 0 {
			return err
		}
		if n > uint64(len(d.b)-d.off) {
			return errShort
		}
		kv, err := d.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skipElem(kv >> 4); err != nil {
				return err
			}
			if err := d.skipElem(kv & 0x0f); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		return d.fields(func(int16, byte) (bool, error) { return false, nil })
	}
	return fmt.Errorf("thrift: unknown type %d", typ)
}

// skipElem reads past an element of a list or map: as skip, but a
// boolean element takes a byte.
func (d *decoder) skipElem(typ byte) error {
	if typ == tBoolTrue || typ == tBoolFalse {
		_, err := d.byte()
		return err
	}
	return d.skip(typ)
}

// want checks a field's type.
func want(id int16, typ, w byte) error {
	if typ != w {
		return fmt.Errorf("thrift: field %d has type %d, want %d", id, typ, w)
	}
	return nil
}
