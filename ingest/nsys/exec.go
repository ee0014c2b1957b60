package nsys

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// readers bounds concurrent SQLite readers across all scans of a Reader's
// process: each is CPU-bound, so more than the cores only adds memory.
var readers = make(chan struct{}, runtime.GOMAXPROCS(0))

// readAheadBytes bounds what the parts read ahead of a scan's consumer
// hold (estimated from their pages, or rows times columns): four parts of
// a wide table (16 MiB), or a part per reader where there are more
// readers, up to 16 (64 MiB): the two largest tables (API calls,
// kernels) end the read, and at four parts each in flight they kept at
// most 8 of 16 readers busy.
var readAheadBytes = int64(min(max(cap(readers), 4), 16)) * partBytes

// partBytes bounds the pages of one part of a page read: rows of
// 200-byte NVTX names made parts of 16 MB, read one at a time.
const partBytes = 4 << 20

var errStopped = errors.New("scan stopped")

// scanner executes one scan's plan: it reads the parts, a few ahead of the
// consumer, and hands their batches to fn in part order, from one
// goroutine at a time. A part the page reader doubts hands the rest of the
// table to SQLite (rest).
type scanner struct {
	r        *Reader
	t        *ingest.Table
	plan     *scanPlan
	s        *strs
	newQuery func() query                // each part gets its own: row fillers keep per-scan caches
	prep     func(arrow.RecordBatch) any // run on each batch by its part's reader; nil: none
}

// prepared is a batch read ahead and what the scan's prep made of it.
type prepared struct {
	rec arrow.RecordBatch
	v   any
}

// prepare is x.prep of rec (nil without one).
func (x *scanner) prepare(rec arrow.RecordBatch) any {
	if x.prep == nil {
		return nil
	}
	return x.prep(rec)
}

// direct is fn for a part read on the consumer's goroutine: each batch
// prepared, then handed on.
func (x *scanner) direct(fn func(arrow.RecordBatch, any) error) func(arrow.RecordBatch) error {
	return func(rec arrow.RecordBatch) error { return fn(rec, x.prepare(rec)) }
}

// run reads table t from src (rows as newQuery selects and fills them)
// and emits its batches in storage (rowid) order.
func (x *scanner) run(src string, fn func(arrow.RecordBatch, any) error) error {
	q := x.newQuery()
	p, err := x.planScan(src, q)
	if err != nil || p == nil {
		return err
	}
	x.plan = p
	if p.done != nil {
		defer p.done()
	}
	if len(p.parts) == 1 {
		err := x.readPart(p.parts[0], q, x.direct(fn))
		if pc := (*pageCorrupt)(nil); errors.As(err, &pc) {
			return x.rest(pc, fn)
		}
		return err
	}
	return x.readAhead(fn)
}

// readPart reads part p with its own builder and hands its batches to fn.
func (x *scanner) readPart(p part, q query, fn func(arrow.RecordBatch) error) error {
	readers <- struct{}{}
	defer func() { <-readers }()
	r := x.r
	b := ingest.NewBuilder(r.opts.Mem, x.t)
	b.Project(q.cols)
	defer b.Release()
	// Size each batch's buffers once (the part's rows, at most a batch)
	// instead of letting every column double its way up.
	b.Reserve(p.batch)
	// A page part holds its batches until it has read every page: if it
	// doubts one, SQLite reads the part again from its start.
	var held []arrow.RecordBatch
	defer func() {
		for _, rec := range held {
			rec.Release()
		}
	}()
	emit := func() error {
		rec := b.NewBatch()
		b.Reserve(p.batch)
		if p.hold {
			held = append(held, rec)
			return nil
		}
		defer rec.Release()
		return fn(rec)
	}
	rows, err := p.rows.read(b, q, emit)
	if err == nil && p.hold {
		if b.Rows() > 0 {
			emit()
		}
		for i, rec := range held {
			if err = fn(rec); err != nil {
				break
			}
			rec.Release()
			held[i] = nil
		}
		held = slices.DeleteFunc(held, func(r arrow.RecordBatch) bool { return r == nil })
		return err
	}
	var pc *pageCorrupt
	if errors.As(err, &pc) {
		return pc
	}
	if err != nil {
		if err == errStopped {
			return err
		}
		return r.wrapDBErr(fmt.Sprintf("reading %s (%s, row %d)", x.plan.src, p.what, rows), err)
	}
	if b.Rows() > 0 {
		return emit()
	}
	return nil
}

// rest reads, through SQLite, the rows after the page reader's last good
// one when it doubted a page.
func (x *scanner) rest(pc *pageCorrupt, fn func(arrow.RecordBatch, any) error) error {
	r, p := x.r, x.plan
	if err := r.doubted(p.src, pc.err, fmt.Sprintf("%s: the page reader doubted a page (%v); rows after rowid %d read through SQLite", p.src, pc.err, pc.last)); err != nil {
		return err
	}
	lo := pc.last
	switch lo {
	case math.MaxInt64:
		return nil // no rowid above it
	case math.MinInt64: // from the table's start
	default:
		lo++
	}
	// The same rowid span as the SQLite path reads (a damaged tree can
	// hold keys past it that SQLite's range walk never sees).
	lo = max(lo, p.lo)
	return x.readPart(part{
		what:  fmt.Sprintf("rowid %d..%d after a doubtful page", lo, p.hi),
		batch: r.opts.BatchRows,
		rows:  rangeRows{r: r, s: x.s, stmt: p.sel + ` WHERE rowid >= ? AND rowid <= ?`, lo: lo, hi: p.hi, driver: true},
	}, x.newQuery(), x.direct(fn))
}

// aheadBytes is what the plan's parts read ahead hold at most.
func (p *scanPlan) aheadBytes() int64 {
	if p.ahead > 0 {
		return p.ahead
	}
	return readAheadBytes
}

// ahead is the state of a scan's read-ahead: part i sends its batches on
// chs[i], which holds all of them, so a part never waits for the consumer
// (a waiting part would hold a reader that an earlier part needs).
type ahead struct {
	chs        []chan prepared
	errs       []error
	done       chan struct{}
	launched   int
	unconsumed int64 // bytes of parts launched and not yet consumed
}

// readAhead reads the parts ahead of the consumer while the unconsumed
// ones hold at most the plan's aheadBytes, which bounds the batches held whatever
// the rows' width; maxAhead bounds the goroutines. The part after the one
// being consumed is read whatever its size: parts of wide rows (NVTX
// names of 200 bytes: 16 MB a part) were otherwise read only once the
// consumer was done with the one before, and reading and consuming never
// overlapped.
func (x *scanner) readAhead(fn func(arrow.RecordBatch, any) error) error {
	ps := x.plan.parts
	maxAhead := 4 * cap(readers)
	a := &ahead{chs: make([]chan prepared, len(ps)), errs: make([]error, len(ps)), done: make(chan struct{})}
	var ferr error
	for i := range ps {
		for ; a.launched < len(ps) && ferr == nil; a.launched++ {
			if a.launched > i+1 && (a.launched >= i+maxAhead || a.unconsumed+ps[a.launched].bytes > x.plan.aheadBytes()) {
				break
			}
			a.unconsumed += ps[a.launched].bytes
			x.launch(a, a.launched)
		}
		a.unconsumed -= ps[i].bytes
		for b := range a.chs[i] {
			if ferr == nil {
				if ferr = fn(b.rec, b.v); ferr != nil {
					close(a.done)
				}
			}
			b.rec.Release()
		}
		if pc := (*pageCorrupt)(nil); ferr == nil && errors.As(a.errs[i], &pc) {
			// Parts after this one are SQLite's now: stop and drop them.
			close(a.done)
			a.drain(i + 1)
			return x.rest(pc, fn)
		}
		if ferr == nil && a.errs[i] != nil {
			ferr = a.errs[i]
			close(a.done)
		}
		if ferr != nil {
			// Drain the parts still running; they stop at their next batch.
			a.drain(i + 1)
			return ferr
		}
	}
	return nil
}

// launch starts reading part i.
func (x *scanner) launch(a *ahead, i int) {
	p := x.plan.parts[i]
	a.chs[i] = make(chan prepared, p.batches)
	q := x.newQuery()
	go func() {
		defer close(a.chs[i])
		err := x.readPart(p, q, func(rec arrow.RecordBatch) error {
			select {
			case <-a.done:
				return errStopped
			default:
			}
			rec.Retain()
			select {
			case a.chs[i] <- prepared{rec, x.prepare(rec)}:
				return nil
			default:
				rec.Release()
				return fmt.Errorf("reading %s (%s): more batches than its %d rows allow", x.plan.src, p.what, p.batches)
			}
		})
		if err != errStopped {
			a.errs[i] = err
		}
	}()
}

// drain releases the batches of the launched parts from `from` on.
func (a *ahead) drain(from int) {
	for j := from; j < a.launched; j++ {
		for b := range a.chs[j] {
			b.rec.Release()
		}
	}
}
