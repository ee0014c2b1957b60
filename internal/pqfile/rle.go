package pqfile

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// The RLE / bit-packing hybrid encoding of definition levels and
// dictionary indices (Parquet's Encodings.md, "Run Length Encoding /
// Bit-Packing Hybrid"): runs of one value as (count<<1, value), other
// values bit-packed in groups of eight as (groups<<1|1, bits).

// maxLiteralGroups bounds a bit-packed run (512 values), as arrow's and
// parquet-mr's encoders do.
const maxLiteralGroups = 64

// appendRLE appends vs (each below 1<<width) to b.
func appendRLE(b []byte, vs []uint32, width int) []byte {
	var lit []uint32
	flush := func(pad bool) {
		for len(lit) > 0 {
			n := min(len(lit), maxLiteralGroups*8)
			if n%8 != 0 && !pad {
				return // only the stream's last run may end in padding
			}
			groups := (n + 7) / 8
			b = binary.AppendUvarint(b, uint64(groups)<<1|1)
			b = appendPacked(b, lit[:n], groups*8, width)
			lit = lit[n:]
		}
	}
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j] == vs[i] {
			j++
		}
		run := j - i
		if run >= 8 {
			// Pad the pending literals to whole groups from the run.
			if k := len(lit) % 8; k != 0 {
				take := 8 - k
				lit = append(lit, vs[i:i+take]...)
				i += take
				run -= take
			}
			if run >= 8 {
				flush(false)
				b = binary.AppendUvarint(b, uint64(run)<<1)
				b = appendLE(b, vs[i], (width+7)/8)
				i = j
				continue
			}
		}
		lit = append(lit, vs[i:j]...)
		if len(lit) >= maxLiteralGroups*8 {
			flush(false)
		}
		i = j
	}
	flush(true)
	return b
}

// appendPacked packs vs into n values of width bits, LSB first (values
// past len(vs) are 0).
func appendPacked(b []byte, vs []uint32, n, width int) []byte {
	var acc uint64
	var nb int
	for k := range n {
		var v uint32
		if k < len(vs) {
			v = vs[k]
		}
		acc |= uint64(v) << nb
		nb += width
		for nb >= 8 {
			b = append(b, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	if nb > 0 {
		b = append(b, byte(acc))
	}
	return b
}

func appendLE(b []byte, v uint32, n int) []byte {
	for range n {
		b = append(b, byte(v))
		v >>= 8
	}
	return b
}

// bitWidth is the width that holds values up to max.
func bitWidth(max uint32) int { return bits.Len32(max) }

var errRLE = errors.New("bad RLE/bit-packed data")

// readRLE decodes n values of width bits from b into out (appended).
func readRLE(out []uint32, b []byte, width, n int) ([]uint32, error) {
	if width > 32 {
		return nil, errRLE
	}
	mask := uint64(1)<<width - 1
	bw := (width + 7) / 8
	for n > 0 {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errRLE
		}
		b = b[k:]
		if h&1 == 0 {
			run := h >> 1
			if len(b) < bw || run == 0 {
				return nil, errRLE
			}
			var v uint32
			for i := range bw {
				v |= uint32(b[i]) << (8 * i)
			}
			b = b[bw:]
			if uint64(v) > mask {
				return nil, errRLE
			}
			m := int(min(run, uint64(n)))
			for range m {
				out = append(out, v)
			}
			n -= m
			continue
		}
		groups := h >> 1
		if width == 0 {
			m := int(min(groups*8, uint64(n)))
			out = append(out, make([]uint32, m)...)
			n -= m
			continue
		}
		if groups == 0 || groups > uint64(len(b)/width) {
			return nil, errRLE
		}
		nbytes := int(groups) * width // groups of 8 values: width bytes each
		var acc uint64
		var nb, p int
		for range int(groups) * 8 {
			for nb < width {
				acc |= uint64(b[p]) << nb
				p++
				nb += 8
			}
			if n > 0 {
				out = append(out, uint32(acc&mask))
				n--
			}
			acc >>= width
			nb -= width
		}
		b = b[nbytes:]
	}
	return out, nil
}
