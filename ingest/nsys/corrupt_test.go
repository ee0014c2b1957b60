package nsys

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// A corruption case: a name and a function that damages a copy of a trace.
type corruption struct {
	name string
	hurt func(t *testing.T, path string)
}

// analyzeWith opens path with Options.Read = mode and analyzes it: the JSON
// of the result, or the error.
func analyzeWith(t *testing.T, path, mode string) ([]byte, error) {
	t.Helper()
	r, err := Open(path, Options{Read: ReadPath(mode)})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := analyze.Analyze(r, analyze.DefaultOptions())
	if err != nil {
		return nil, err
	}
	res.Warnings = nil // the default path says where it fell back
	return json.Marshal(res)
}

// readTablePages lists the pages of the tables analyze reads: each table's
// root and leaves, from the page reader.
func readTablePages(t *testing.T, path string) []uint32 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f, err := sqlitefile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pages []uint32
	for _, tab := range []string{schema.Runtime.Name, schema.Kernel.Name, schema.Memcpy.Name, schema.Sync.Name, schema.GPUFault.Name, schema.CPUFault.Name, schema.StringIds.Name} {
		var root int64
		if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name=?`, tab).Scan(&root); err != nil {
			continue
		}
		leaves, err := f.Leaves(uint32(root))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, uint32(root))
		pages = append(pages, leaves...)
	}
	return pages
}

func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func sqlUpdate(q string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		db, err := openRW(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorruptionSuite damages copies of real traces (truncations, header
// fields, zeroed pages, seeded byte flips on the pages of the tables
// analyze reads, out-of-range enums) and checks that each either fails
// with an error, as SQLite fails on it, or gives exactly the analysis the
// SQLite driver path gives; a panic fails the test binary.
func TestCorruptionSuite(t *testing.T) {
	flips := 64
	if raceEnabled || testing.Short() {
		flips = 10
	}
	for _, name := range []string{"um_pingpong_default.sqlite", "um_pingpong_explicit.sqlite"} {
		orig := filepath.Join(sharedDir(t, "traces"), name)
		st, err := os.Stat(orig)
		if err != nil {
			t.Fatal(err)
		}
		size := st.Size()
		hdr := make([]byte, 100)
		fo, err := os.Open(orig)
		if err != nil {
			t.Fatal(err)
		}
		fo.ReadAt(hdr, 0)
		fo.Close()
		ps := int64(binary.BigEndian.Uint16(hdr[16:]))
		pages := readTablePages(t, orig)
		intact, err := analyzeWith(t, orig, "")
		if err != nil {
			t.Fatal(err)
		}
		leaf := func(i int) int64 { return int64(pages[i]-1) * ps }
		cases := []corruption{
			{"truncated to the header", func(t *testing.T, p string) { os.Truncate(p, 100) }},
			{"truncated to 3 pages", func(t *testing.T, p string) { os.Truncate(p, 3*ps) }},
			{"truncated by half", func(t *testing.T, p string) { os.Truncate(p, size/2) }},
			{"last page cut", func(t *testing.T, p string) { os.Truncate(p, size-ps) }},
			{"last byte cut", func(t *testing.T, p string) { os.Truncate(p, size-1) }},
			{"truncated by half, page count unknown", func(t *testing.T, p string) {
				patch(t, p, 92, u32(binary.BigEndian.Uint32(hdr[24:])+1)) // version-valid-for no longer matches
				os.Truncate(p, size/2)
			}},
			{"page size 768", func(t *testing.T, p string) { patch(t, p, 16, u16(768)) }},
			{"page size halved", func(t *testing.T, p string) { patch(t, p, 16, u16(uint16(ps/2))) }},
			{"page count huge", func(t *testing.T, p string) { patch(t, p, 28, u32(1<<30)) }},
			{"WAL flag without a WAL", func(t *testing.T, p string) { patch(t, p, 18, []byte{2, 2}) }},
			{"UTF-16 encoding", func(t *testing.T, p string) { patch(t, p, 56, u32(2)) }},
			{"200 reserved bytes", func(t *testing.T, p string) { patch(t, p, 20, []byte{200}) }},
			{"freelist trunk out of the file", func(t *testing.T, p string) { patch(t, p, 32, u32(1<<30)) }},
			{"schema page zeroed", func(t *testing.T, p string) { patch(t, p, 100, make([]byte, ps-100)) }},
			{"first read page zeroed", func(t *testing.T, p string) { patch(t, p, leaf(0), make([]byte, ps)) }},
			{"middle read page zeroed", func(t *testing.T, p string) { patch(t, p, leaf(len(pages)/2), make([]byte, ps)) }},
			{"last read page zeroed", func(t *testing.T, p string) { patch(t, p, leaf(len(pages)-1), make([]byte, ps)) }},
			{"copyKind -45", sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind=-45 WHERE rowid % 7 = 0`)},
			{"copyKind -1, text ids", sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind=-1, streamId='x' WHERE rowid % 5 = 0`)},
			{"kernel names unresolved", sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName=demangledName+100000, shortName=-1`)},
			{"API times inverted", sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end"=start-5, start=-start WHERE rowid % 3 = 0`)},
		}
		rng := rand.New(rand.NewSource(int64(len(name))))
		for i := 0; i < flips; i++ {
			pg := pages[rng.Intn(len(pages))]
			// Half the flips hit the page header and cell pointers,
			// where a byte decides the layout; the rest anywhere.
			off := int64(rng.Intn(int(ps)))
			if i%2 == 0 {
				off = int64(rng.Intn(40))
			}
			at := int64(pg-1)*ps + off
			if pg == 1 {
				at += 100
			}
			x := byte(1 + rng.Intn(255))
			cases = append(cases, corruption{fmt.Sprintf("flip page %d byte %d ^%#x", pg, off, x), func(t *testing.T, p string) {
				b := make([]byte, 1)
				f, err := os.OpenFile(p, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.ReadAt(b, at)
				b[0] ^= x
				f.WriteAt(b, at)
				f.Close()
			}})
		}
		for _, c := range cases {
			t.Run(strings.TrimSuffix(name, ".sqlite")+"/"+c.name, func(t *testing.T) {
				p := copyTrace(t, orig)
				c.hurt(t, p)
				got, err := analyzeWith(t, p, "")
				want, werr := analyzeWith(t, p, "driver")
				switch {
				case err != nil && strings.ContainsAny(err.Error(), "\n\r"):
					t.Errorf("error is not one line: %q", err)
				case err != nil && !strings.Contains(err.Error(), p):
					t.Errorf("error does not name the file: %v", err)
				case err != nil && werr == nil:
					t.Errorf("page reader path failed where SQLite reads: %v", err)
				case err == nil && werr != nil:
					// The SQLite path checks every table it reads
					// (quick_check) and fails on damage that leaves
					// what the page path reads intact (a page's
					// fragmentation count); changed figures are not.
					if !bytes.Equal(got, intact) {
						t.Errorf("page reader path read what SQLite rejects (%v), and its analysis differs from the intact file's", werr)
					}
				case err == nil && !bytes.Equal(got, want):
					t.Errorf("analysis differs from the SQLite driver path's")
				}
			})
		}
	}
}
