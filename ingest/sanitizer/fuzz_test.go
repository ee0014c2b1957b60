package sanitizer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// seeds adds every shared log with the given extensions to the corpus.
func seeds(f *testing.F, exts ...string) {
	for _, sub := range [][]string{{"sanitizer"}, {"external", "sanitizer"}} {
		dir := testshared.Path(sub...)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // shared data absent: testdata/fuzz still runs
		}
		for _, e := range ents {
			for _, x := range exts {
				if filepath.Ext(e.Name()) == x {
					if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
						f.Add(b)
					}
				}
			}
		}
	}
}

// check holds for any successful parse: bounded output, and the Arrow
// conversion works.
func check(t *testing.T, l *Log, max int) {
	if len(l.Findings) > max {
		t.Fatalf("%d findings, at most %d possible", len(l.Findings), max)
	}
	if len(l.Warnings) > maxWarnings+1 {
		t.Fatalf("%d warnings", len(l.Warnings))
	}
	for i := range l.Findings {
		f := &l.Findings[i]
		if len(f.HostFrames) > maxFrames+1 || len(f.DeviceFrames) > maxFrames+1 || len(f.RaceWith) > maxRaceWith {
			t.Fatalf("record %d: %d/%d/%d frames", i, len(f.HostFrames), len(f.DeviceFrames), len(f.RaceWith))
		}
		if f.Kind == "" || f.Tool == "" || f.Severity == "" {
			t.Fatalf("record %d: empty kind/tool/severity: %+v", i, f)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := Record(mem, l)
	if rec.NumRows() != int64(len(l.Findings)) {
		t.Fatalf("%d rows for %d findings", rec.NumRows(), len(l.Findings))
	}
	rec.Release()
	mem.AssertSize(t, 0)
}

func FuzzText(f *testing.F) {
	seeds(f, ".txt", ".log")
	f.Add([]byte("========= COMPUTE-SANITIZER\r========= Leaked 1,000 bytes at 0x1\r\n=========\n"))
	f.Add([]byte("==1== Program hit error 4 on CUDA API call to cudaMemcpy \n==1==     Host Frame:x [0x1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseText(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		check(t, l, bytes.Count(data, []byte("\n"))+bytes.Count(data, []byte("\r"))+1)
	})
}

func FuzzXML(f *testing.F) {
	seeds(f, ".xml")
	f.Add([]byte(`<?xml version="1.0"?><ComputeSanitizerOutput><record><kind>Api</kind><what><result>x</result></what></record>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseXML(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		check(t, l, bytes.Count(data, []byte("record")))
	})
}
