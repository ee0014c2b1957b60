package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/report"
)

// The corruption campaign: mutants of the committed traces and of a small
// synthetic one (byte flips anywhere and in b-tree page headers,
// truncations, zeroed, garbage, copied and swapped pages), each analyzed
// in-process through the job opener, as every command opens traces. For
// every mutant: no panic (it would end the test binary), no hang (a
// deadline per mutant), an error is one line naming the file with exit 3;
// and where SQLite's PRAGMA integrity_check fails on the mutant, umtrace
// never succeeds with figures (the JSON report less its warnings) other
// than the intact trace's. Under --salvage a damaged trace the reader
// detects analyzes and is marked partial; export never fails with exit 4
// (an output error) on a damaged input; a quarter of the mutants are also
// read through SQLite alone (nsys.ReadDriver, UMTRACE_READER=driver in
// the CLI).

const campaignMutants = 1040

type mutant struct {
	name string // source trace and what was done
	i    int    // its number
	src  int    // index of the source trace
	path string
}

func TestCorruptionCampaign(t *testing.T) {
	dir := t.TempDir()
	var srcs []string
	for _, n := range []string{"um_pingpong_default", "um_pingpong_explicit", "um_pingpong_prefetch"} {
		srcs = append(srcs, tracePath(t, n))
	}
	synth := filepath.Join(dir, "synth_small.sqlite")
	var out, errb bytes.Buffer
	if code := run(&out, &errb, []string{"synth", synth, "--rows", "20000", "--seed", "11"}); code != exitOK {
		t.Fatalf("synth: exit %d: %s", code, errb.String())
	}
	srcs = append(srcs, synth)

	// The intact traces' reports, and what each file looks like.
	type source struct {
		data     []byte
		pageSize int
		report   []byte
	}
	sources := make([]source, len(srcs))
	for i, p := range srcs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := campaignReport(opener.Opener{}, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ps := int(binary.BigEndian.Uint16(data[16:]))
		if ps == 1 {
			ps = 65536
		}
		sources[i] = source{data, ps, rep}
	}

	// The mutants, from a fixed seed; the small committed traces get
	// more of them (a run costs less), the 2 MB one and synth fewer.
	rng := rand.New(rand.NewPCG(26, 7))
	weights := []int{2, 3, 3, 2}
	var muts []mutant
	for len(muts) < campaignMutants {
		for si, w := range weights {
			for k := 0; k < w && len(muts) < campaignMutants; k++ {
				s := sources[si]
				b, what := mutate(rng, s.data, s.pageSize)
				name := fmt.Sprintf("m%04d", len(muts))
				p := filepath.Join(dir, name, filepath.Base(srcs[si]))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				muts = append(muts, mutant{name: fmt.Sprintf("%s %s: %s", name, filepath.Base(srcs[si]), what), i: len(muts), src: si, path: p})
			}
		}
	}

	var mu sync.Mutex
	stats := map[string]int{}
	count := func(k string) { mu.Lock(); stats[k]++; mu.Unlock() }
	check := func(m mutant, driver bool) {
		damaged := !integrityOK(m.path)
		o := opener.Opener{}
		if driver {
			o.Read = nsys.ReadDriver // as UMTRACE_READER=driver gives the CLI
		}
		rep, err := campaignReportDeadline(t, m, o)
		switch {
		case err != nil:
			count("error")
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.Contains(msg, m.path) {
				t.Errorf("%s: error not one line naming the file: %q", m.name, msg)
			}
			if c := exitcode.Of(err); c != exitBadInput {
				t.Errorf("%s: exit %d, want 3: %v", m.name, c, err)
			}
			if !driver && errors.Is(err, nsys.ErrDamaged) {
				// --salvage reads on around what the reader found.
				if rep, err := campaignReportDeadline(t, m, opener.Opener{Salvage: true}); err == nil && !bytes.Contains(rep, []byte(`"partial": true`)) {
					t.Errorf("%s: --salvage: the report does not say partial", m.name)
				} else if err == nil {
					count("salvaged")
				}
			}
		case damaged && !bytes.Equal(rep, sources[m.src].report):
			t.Errorf("%s: integrity_check fails, and umtrace succeeds with figures other than the intact trace's", m.name)
		case damaged:
			count("damaged, same figures")
		case !bytes.Equal(rep, sources[m.src].report):
			count("intact per SQLite, other figures") // a value changed: nothing can tell
		default:
			count("same figures")
		}
		if damaged {
			count("integrity_check fails")
		}
		if !driver && err == nil && m.i%4 == 0 {
			// export reads tables analysis does not: the damage may
			// be there, and it is the input's fault (exit 3), not 4.
			out := filepath.Join(filepath.Dir(m.path), "dataset")
			outErr, inErr := exportOne(opener.Opener{}, m.path, "x", out, "parquet", "", analyze.DefaultOptions())
			if outErr != nil {
				t.Errorf("%s: export failed as an output error (exit 4): %v", m.name, outErr)
			}
			if inErr != nil {
				count("export: bad input")
				if c := exitcode.Of(inErr); c != exitBadInput {
					t.Errorf("%s: export: exit %d, want 3: %v", m.name, c, inErr)
				}
			}
			os.RemoveAll(out)
		}
	}
	runAll := func(ms []mutant, driver bool) {
		work := make(chan mutant)
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range work {
					check(m, driver)
				}
			}()
		}
		for _, m := range ms {
			work <- m
		}
		close(work)
		wg.Wait()
	}
	runAll(muts, false)
	// Under the race detector (5 minutes for the whole campaign on 2
	// CPUs) a sixteenth, not a quarter, is read again through SQLite.
	every := 4
	if underRace {
		every = 16
	}
	var quarter []mutant
	for i, m := range muts {
		if i%every == 1 {
			quarter = append(quarter, m)
		}
	}
	runAll(quarter, true)
	t.Logf("%d mutants (+%d with UMTRACE_READER=driver): %v", len(muts), len(quarter), stats)
	if stats["integrity_check fails"] < 100 || stats["error"] < 100 {
		t.Errorf("the generator made too little damage: %v", stats)
	}
}

// campaignReport analyzes path through o: the JSON report less its
// warnings and partial mark (the figures).
func campaignReport(o opener.Opener, path string) ([]byte, error) {
	tr, err := o.Analyze(path, analyze.DefaultOptions())
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	var b bytes.Buffer
	if !o.Salvage {
		tr.Result.Warnings = nil
	}
	if err := report.EncodeJSON(&b, tr.Result); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// campaignReportDeadline is campaignReport with a deadline: a mutant that
// takes longer hangs the reader.
func campaignReportDeadline(t *testing.T, m mutant, o opener.Opener) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	c := make(chan res, 1)
	go func() {
		b, err := campaignReport(o, m.path)
		c <- res{b, err}
	}()
	select {
	case r := <-c:
		return r.b, r.err
	case <-time.After(2 * time.Minute):
		t.Errorf("%s: no answer in 2 minutes", m.name)
		return nil, fmt.Errorf("%s: hangs", m.path)
	}
}

// integrityOK runs PRAGMA integrity_check on path through the go-sqlite3
// driver (read-only, immutable): false when it reports anything or fails.
func integrityOK(path string) bool {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return false
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&s); err != nil {
		return false
	}
	return s == "ok"
}

// mutate returns a damaged copy of data (a SQLite file of pages of ps
// bytes) and what was done to it.
func mutate(rng *rand.Rand, data []byte, ps int) ([]byte, string) {
	b := bytes.Clone(data)
	pages := len(b) / ps
	page := func() int { return 1 + rng.IntN(pages-1) } // not page 0 (the header)
	switch k := rng.IntN(10); k {
	case 0, 1: // flips anywhere
		n := 1 + rng.IntN(4)
		var at []string
		for range n {
			o := 100 + rng.IntN(len(b)-100)
			x := byte(1 + rng.IntN(255))
			b[o] ^= x
			at = append(at, fmt.Sprintf("%d^%#x", o, x))
		}
		return b, "flip " + strings.Join(at, ",")
	case 2, 3: // a flip in a b-tree page's header or cell pointers
		p := page()
		o := p*ps + rng.IntN(24)
		x := byte(1 + rng.IntN(255))
		b[o] ^= x
		return b, fmt.Sprintf("page %d header byte %d ^%#x", p+1, o-p*ps, x)
	case 4: // a flip in a cell of a page (keys, varints, record headers)
		p := page()
		o := p*ps + ps/2 + rng.IntN(ps/2)
		b[o] ^= 1 << rng.IntN(8)
		return b, fmt.Sprintf("page %d cell byte %d, one bit", p+1, o-p*ps)
	case 5: // truncation
		n := 100 + rng.IntN(len(b)-100)
		if rng.IntN(2) == 0 {
			n = (n / ps) * ps
		}
		return b[:max(n, 100)], fmt.Sprintf("truncated to %d bytes", max(n, 100))
	case 6: // a zeroed page
		p := page()
		clear(b[p*ps : (p+1)*ps])
		return b, fmt.Sprintf("page %d zeroed", p+1)
	case 7: // a page of garbage
		p := page()
		for i := p * ps; i < (p+1)*ps; i++ {
			b[i] = byte(rng.Uint32())
		}
		return b, fmt.Sprintf("page %d garbage", p+1)
	case 8: // a page copied over another
		p, q := page(), page()
		copy(b[q*ps:(q+1)*ps], data[p*ps:(p+1)*ps])
		return b, fmt.Sprintf("page %d copied over page %d", p+1, q+1)
	default: // two pages swapped
		p, q := page(), page()
		copy(b[q*ps:(q+1)*ps], data[p*ps:(p+1)*ps])
		copy(b[p*ps:(p+1)*ps], data[q*ps:(q+1)*ps])
		return b, fmt.Sprintf("pages %d and %d swapped", p+1, q+1)
	}
}

// TestSalvageFlag: a trace whose CUDA API table's page was swapped with a
// page of another table (SQLite reads it without a word) is exit 3 with
// one line naming the file; with --salvage it analyzes, says so in a
// warning, and the JSON says "partial": true.
func TestSalvageFlag(t *testing.T) {
	src, err := os.ReadFile(tracePath(t, "um_pingpong_explicit"))
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.BigEndian.Uint16(src[16:]))
	b := bytes.Clone(src)
	p, q := 12, 88 // CUPTI_ACTIVITY_KIND_RUNTIME's only page, a page of OSRT_API (1-based)
	copy(b[(p-1)*ps:p*ps], src[(q-1)*ps:q*ps])
	copy(b[(q-1)*ps:q*ps], src[(p-1)*ps:p*ps])
	path := filepath.Join(t.TempDir(), "um_pingpong_explicit.sqlite")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if integrityOK(path) {
		t.Fatal("the swap did not damage the file")
	}
	var out, errb bytes.Buffer
	code := run(&out, &errb, []string{"analyze", path, "-f", "json"})
	if code != exitBadInput || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), path) ||
		!strings.Contains(errb.String(), "corrupt SQLite file") || !strings.Contains(errb.String(), "--salvage") || out.Len() != 0 {
		t.Errorf("without --salvage: exit %d, stderr %q, %d bytes of stdout", code, errb.String(), out.Len())
	}
	out.Reset()
	errb.Reset()
	code = run(&out, &errb, []string{"analyze", path, "-f", "json", "--salvage"})
	if code != exitOK || !strings.Contains(out.String(), `"partial": true`) || !strings.Contains(out.String(), "results are partial (--salvage)") {
		t.Errorf("--salvage: exit %d (%s), partial in the JSON: %v", code, errb.String(), strings.Contains(out.String(), `"partial": true`))
	}
	out.Reset()
	code = run(&out, &errb, []string{"analyze", path, "--salvage"})
	if code != exitOK || !strings.Contains(out.String(), "results are partial") {
		t.Errorf("--salvage, text: exit %d, no warning that results are partial:\n%s", code, out.String())
	}
}
