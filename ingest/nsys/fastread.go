package nsys

/*
#include <stdint.h>
#include <stdlib.h>

// The SQLite C API, resolved at link time to the copy of SQLite that
// github.com/mattn/go-sqlite3 compiles into the binary (this package imports
// it). The declarations are weak so that this package links on its own;
// umFastAvailable reports whether they resolved.
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
extern int sqlite3_open_v2(const char*, sqlite3**, int, const char*) __attribute__((weak));
extern int sqlite3_close_v2(sqlite3*) __attribute__((weak));
extern int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**) __attribute__((weak));
extern int sqlite3_bind_int64(sqlite3_stmt*, int, long long) __attribute__((weak));
extern int sqlite3_step(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_column_type(sqlite3_stmt*, int) __attribute__((weak));
extern long long sqlite3_column_int64(sqlite3_stmt*, int) __attribute__((weak));
extern int sqlite3_finalize(sqlite3_stmt*) __attribute__((weak));
extern const char* sqlite3_errmsg(sqlite3*) __attribute__((weak));

static int umFastAvailable(void) {
	return sqlite3_open_v2 && sqlite3_close_v2 && sqlite3_prepare_v2 && sqlite3_bind_int64 &&
		sqlite3_step && sqlite3_column_type && sqlite3_column_int64 &&
		sqlite3_finalize && sqlite3_errmsg;
}

// umOpen opens uri read-only and prepares sql with rowid bounds lo, hi.
// On error it returns the SQLite code and leaves *db (possibly) set so the
// caller can read the message and close it.
static int umOpen(const char* uri, const char* sql, long long lo, long long hi, sqlite3** db, sqlite3_stmt** st) {
	int rc = sqlite3_open_v2(uri, db, 0x00000001 | 0x00000040 | 0x00008000, 0); // READONLY | URI | NOMUTEX
	if (rc) return rc;
	rc = sqlite3_prepare_v2(*db, sql, -1, st, 0);
	if (rc) return rc;
	if ((rc = sqlite3_bind_int64(*st, 1, lo))) return rc;
	return sqlite3_bind_int64(*st, 2, hi);
}

// umRead steps up to max rows of ncols integer columns into vals and nulls
// (row-major). It returns the rows read; *rc is 100 (SQLITE_ROW) when more
// may follow, 101 (SQLITE_DONE) at the end, or an error code.
static int umRead(sqlite3_stmt* st, int ncols, int max, int64_t* vals, uint8_t* nulls, int* rc) {
	int n = 0;
	while (n < max) {
		int r = sqlite3_step(st);
		if (r != 100) { *rc = r; return n; }
		int64_t* v = vals + (size_t)n * ncols;
		uint8_t* z = nulls + (size_t)n * ncols;
		for (int c = 0; c < ncols; c++) {
			// As the page reader's IntOnly columns: integers, and reals
			// converted by column_int64; NULL is 1, TEXT and BLOB are 2
			// (sqlitefile.NotInt), both read as NULL.
			int t = sqlite3_column_type(st, c);
			if (t == 1 || t == 2) { // SQLITE_INTEGER, SQLITE_FLOAT
				v[c] = sqlite3_column_int64(st, c);
				z[c] = 0;
			} else {
				v[c] = 0;
				z[c] = t == 5 ? 1 : 2; // SQLITE_NULL; SQLITE_TEXT, SQLITE_BLOB
			}
		}
		n++;
	}
	*rc = 100;
	return n;
}

static void umClose(sqlite3* db, sqlite3_stmt* st) {
	if (st) sqlite3_finalize(st);
	if (db) sqlite3_close_v2(db);
}
*/
import "C"

import (
	"database/sql"
	"errors"
	"fmt"
	"unsafe"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// fastRows is the number of rows one C call reads.
const fastRows = 1024

// fastAvailable reports whether the bulk C reader can be used (set once,
// when the package loads; Options.Read = ReadDriverRows does without it).
var fastAvailable = C.umFastAvailable() != 0

// fast reads integer-only queries with lo <= rowid < hi straight
// from SQLite's C API, fastRows rows per cgo call: the driver path costs a
// cgo call and a boxed value per row and column, which is most of the
// time on large tables. It returns handled=false when it cannot run.
func (p rangeRows) fast(b *ingest.Builder, q query, emit func() error) (rows int, err error) {
	r, s, stmt, lo, hi := p.r, p.s, p.stmt, p.lo, p.hi
	curi := C.CString(r.uri)
	defer C.free(unsafe.Pointer(curi))
	csql := C.CString(stmt)
	defer C.free(unsafe.Pointer(csql))
	var db *C.sqlite3
	var st *C.sqlite3_stmt
	defer func() { C.umClose(db, st) }()
	if rc := C.umOpen(curi, csql, C.longlong(lo), C.longlong(hi), &db, &st); rc != 0 {
		return 0, sqliteErr(db, rc)
	}
	n := len(q.ints)
	vals := make([]int64, fastRows*n)
	nulls := make([]uint8, fastRows*n)
	iv := make([]sql.NullInt64, n)
	for {
		var rc C.int
		got := int(C.umRead(st, C.int(n), fastRows, (*C.int64_t)(unsafe.Pointer(&vals[0])), (*C.uint8_t)(unsafe.Pointer(&nulls[0])), &rc))
		for i := 0; i < got; i++ {
			row := vals[i*n : i*n+n]
			z := nulls[i*n : i*n+n]
			for c := range iv {
				iv[c] = sql.NullInt64{Int64: row[c], Valid: z[c] == sqlitefile.IsValue}
				if z[c] == sqlitefile.NotInt {
					q.notInt(c)
				}
			}
			rows++
			if err := q.add(b, iv, nil, s, emit); err != nil {
				return rows, err
			}
		}
		switch rc {
		case 100:
		case 101:
			return rows, nil
		default:
			return rows, sqliteErr(db, rc)
		}
	}
}

func sqliteErr(db *C.sqlite3, rc C.int) error {
	msg := fmt.Sprintf("sqlite error %d", int(rc))
	if db != nil {
		msg = C.GoString(C.sqlite3_errmsg(db))
	}
	switch rc & 0xff {
	case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
		return fmt.Errorf("%w (%s)", ErrCorrupt, msg)
	}
	return errors.New(msg)
}
