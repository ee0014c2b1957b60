// Package chunks holds List, the append-only list analyze collects records
// in.
package chunks

// List is an append-only list kept in blocks that double up to BlockLen
// elements and then stay that size: growing it never copies, and its
// unused capacity is under one block (append's growth copies and can leave
// a large list with a quarter or, after doubling, half of it unused; at
// tens of millions of records either costs the garbage collector dearly).
// The zero value is an empty list; a nil *List is empty too for Len,
// AppendTo and DrainTo.
type List[T any] struct {
	blocks [][]T
	n      int
}

// BlockLen is the largest block's length.
const BlockLen = 1 << 15

// Push appends v.
func (l *List[T]) Push(v T) {
	b := l.last()
	*b = append(*b, v)
	l.n++
}

// last is the block to append to, a new one when the last is full.
func (l *List[T]) last() *[]T {
	if len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == cap(l.blocks[len(l.blocks)-1]) {
		n := 64
		if len(l.blocks) > 0 {
			n = min(2*cap(l.blocks[len(l.blocks)-1]), BlockLen)
		}
		l.blocks = append(l.blocks, make([]T, 0, n))
	}
	return &l.blocks[len(l.blocks)-1]
}

// PushAll appends vs, into the blocks that as many Pushes would fill.
func (l *List[T]) PushAll(vs []T) {
	for len(vs) > 0 {
		b := l.last()
		k := min(len(vs), cap(*b)-len(*b))
		*b = append(*b, vs[:k]...)
		l.n += k
		vs = vs[k:]
	}
}

// Len is the number of elements.
func (l *List[T]) Len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// Blocks returns the list's blocks, in order: their elements may be
// changed in place, and a block set to nil in the returned slice is
// dropped from the list's memory (not from its Len).
func (l *List[T]) Blocks() [][]T {
	if l == nil {
		return nil
	}
	return l.blocks
}

// AppendTo appends the elements to dst, in order.
func (l *List[T]) AppendTo(dst []T) []T {
	if l == nil {
		return dst
	}
	for _, b := range l.blocks {
		dst = append(dst, b...)
	}
	return dst
}

// DrainTo appends the elements to dst, in order, dropping each block once
// copied; l is empty afterwards.
func (l *List[T]) DrainTo(dst []T) []T { return l.DrainFrom(dst, 0, 0) }

// DrainFrom appends the elements from block b's element i on to dst, in
// order, dropping each block once copied; l is empty afterwards.
func (l *List[T]) DrainFrom(dst []T, b, i int) []T {
	if l == nil {
		return dst
	}
	for k := b; k < len(l.blocks); k++ {
		if k == b {
			dst = append(dst, l.blocks[k][i:]...)
		} else {
			dst = append(dst, l.blocks[k]...)
		}
		l.blocks[k] = nil
	}
	l.blocks, l.n = nil, 0
	return dst
}

// Take returns l's blocks, in order, and empties l: a block the caller
// sets to nil is then dropped from memory (unless another list shares it).
func (l *List[T]) Take() [][]T {
	if l == nil {
		return nil
	}
	b := l.blocks
	l.blocks, l.n = nil, 0
	return b
}

// Share appends o's blocks to l's, without copying them: the two lists
// then share those elements, and neither may Push any more (l's last
// block may be o's).
func (l *List[T]) Share(o *List[T]) {
	if o == nil {
		return
	}
	l.blocks = append(l.blocks, o.blocks...)
	l.n += o.n
}
