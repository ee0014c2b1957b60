package analyze

// chunks is an append-only list kept in blocks that double up to
// chunkLen elements and then stay that size: growing it never copies, and
// its unused capacity is under one block (append's growth copies and can
// leave a large list with a quarter or, after doubling, half of it unused;
// at tens of millions of records either costs the garbage collector dearly).
type chunks[T any] struct {
	blocks [][]T
	n      int
}

const chunkLen = 1 << 15

func (c *chunks[T]) push(v T) {
	if len(c.blocks) == 0 || len(c.blocks[len(c.blocks)-1]) == cap(c.blocks[len(c.blocks)-1]) {
		n := 64
		if len(c.blocks) > 0 {
			n = min(2*cap(c.blocks[len(c.blocks)-1]), chunkLen)
		}
		c.blocks = append(c.blocks, make([]T, 0, n))
	}
	b := &c.blocks[len(c.blocks)-1]
	*b = append(*b, v)
	c.n++
}

// len is the number of elements.
func (c *chunks[T]) len() int {
	if c == nil {
		return 0
	}
	return c.n
}

// appendTo appends the elements to dst, in order.
func (c *chunks[T]) appendTo(dst []T) []T {
	if c == nil {
		return dst
	}
	for _, b := range c.blocks {
		dst = append(dst, b...)
	}
	return dst
}

// drainTo appends the elements to dst, in order, dropping each block once
// copied; c is empty afterwards.
func (c *chunks[T]) drainTo(dst []T) []T {
	if c == nil {
		return dst
	}
	for i, b := range c.blocks {
		dst = append(dst, b...)
		c.blocks[i] = nil
	}
	c.blocks, c.n = nil, 0
	return dst
}
