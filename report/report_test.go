package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
)

func sample() *analyze.Result {
	return &analyze.Result{
		SchemaVersion: analyze.SchemaVersion,
		Trace:         analyze.TraceMeta{File: "a|b.sqlite", StartNs: 1000, EndNs: 2_000_001_000, DurationNs: 2e9},
		Verdict:       analyze.VerdictStorm,
		Reason:        "1 storm episode",
		Episodes: []analyze.Episode{{Index: 1, StartNs: 1000 + 5e8, EndNs: 1000 + 1e9, DurationNs: 5e8, Stalls: 3, FirstStep: 2, LastStep: 4,
			StallAPIs: []analyze.NameCount{{Name: "cudaStreamSynchronize", Count: 3, Ns: 3e7}}}},
		SyncAPIs: []analyze.APIStats{{Name: "cudaStreamSynchronize", Kind: analyze.Explicit, Dist: analyze.Dist{Count: 3, Total: 3e7, Median: 1e7}}},
	}
}

func TestFormats(t *testing.T) {
	r := sample()
	for _, f := range Formats {
		var a, b bytes.Buffer
		if err := Generate(&a, r, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		Generate(&b, r, f)
		if a.Len() == 0 || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: empty or not deterministic", f)
		}
	}
	var md bytes.Buffer
	Generate(&md, r, "md")
	for _, want := range []string{"**Verdict: STORM**", "| 1 | 0.500 s | 1.000 s | 500.000 | 3 |", "# umtrace report: `a|b.sqlite`", "2–4"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var h bytes.Buffer
	Generate(&h, r, "html")
	if !strings.Contains(h.String(), `<p class="storm"><b>Verdict: STORM</b>`) || !strings.Contains(h.String(), `<td class="l">cudaStreamSynchronize</td>`) {
		t.Errorf("html:\n%s", h.String())
	}
	if err := Generate(&h, r, "pdf"); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestJSONSortedKeys checks that every object in the JSON report has its
// keys in sorted order and that the stream decodes back to the Result.
func TestJSONSortedKeys(t *testing.T) {
	r := sample()
	r.Sanitizer = &analyze.SanitizerReport{Logs: []analyze.SanitizerLog{{File: "m.txt", ToolErrors: -1}}}
	var b bytes.Buffer
	if err := Generate(&b, r, "json"); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
	type frame struct {
		obj  bool
		last string
		key  bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := len(stack) - 1
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if top >= 0 && stack[top].obj {
					stack[top].key = true
				}
				stack = append(stack, frame{obj: v == '{', key: true})
			} else {
				stack = stack[:top]
			}
			continue
		case string:
			if top >= 0 && stack[top].obj && stack[top].key {
				if v < stack[top].last {
					t.Errorf("key %q after %q", v, stack[top].last)
				}
				stack[top].last = v
				stack[top].key = false
				continue
			}
		}
		if top >= 0 && stack[top].obj {
			stack[top].key = true
		}
	}
	var back analyze.Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != r.Verdict || len(back.Episodes) != 1 || back.Episodes[0].FirstStep != 2 || back.Sanitizer == nil {
		t.Errorf("round trip: %+v", back)
	}
}

func TestHTMLTimeline(t *testing.T) {
	r := sample()
	r.Timeline = analyze.Timeline{StartNs: 1000, BinNs: 1e6, Bins: []analyze.TimelineBin{{StartNs: 1000, BlockedNs: 5e5, Storm: true}, {StartNs: 1e6 + 1000}}}
	var h, md bytes.Buffer
	Generate(&h, r, "html")
	Generate(&md, r, "md")
	if !strings.Contains(md.String(), "host blocked  █· [500.0 µs]") || !strings.Contains(md.String(), "storm         █·") {
		t.Errorf("markdown time axis:\n%s", md.String())
	}
	if !strings.Contains(h.String(), `<svg xmlns="http://www.w3.org/2000/svg" id="timeline"`) || strings.Contains(h.String(), "```") {
		t.Errorf("html time axis:\n%s", h.String())
	}
}

// TestEncodeSortedMatchesJSON checks the encoder's own scalar formatting
// against encoding/json on a struct whose fields are already in key order.
func TestEncodeSortedMatchesJSON(t *testing.T) {
	type inner struct {
		A float64 `json:"a"`
		B string  `json:"b"`
	}
	type doc struct {
		Bools   []bool    `json:"bools"`
		Floats  []float64 `json:"floats"`
		Ints    []int64   `json:"ints"`
		Nested  []inner   `json:"nested"`
		Strings []string  `json:"strings"`
	}
	d := doc{
		Bools:   []bool{true, false},
		Floats:  []float64{0, -0.5, 1, 1.5, 123456789.125, 1e-7, 1e-6, 9.99e20, 1e21, 1.2345e300, -3e-9, 0.1 + 0.2, 5e-324},
		Ints:    []int64{0, -1, 1 << 62},
		Nested:  []inner{{A: 2.5, B: "x"}},
		Strings: []string{"", "plain ascii", `quote " and \ slash`, "<tag> & amp", "tab\tnewline\n", "ünïcödé", "\u2028", "\x7f"},
	}
	got, want := encodeBoth(t, d)
	if got != want {
		t.Errorf("encodeSorted:\n%s\nencoding/json:\n%s", got, want)
	}
}

// encodeBoth returns v as encodeSorted writes it and as encoding/json's
// MarshalIndent does (with encodeSorted's final newline).
func encodeBoth(t *testing.T, v any) (got, want string) {
	t.Helper()
	var b bytes.Buffer
	if err := encodeSorted(&b, v); err != nil {
		t.Fatal(err)
	}
	w, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), string(w) + "\n"
}

// TestEncodeSortedLongLists: lists long enough to be encoded in two halves
// at once (nested in one another, of structs, floats and strings) give
// the bytes encoding/json gives, and a value that cannot be encoded in the
// second half is the encoder's error.
func TestEncodeSortedLongLists(t *testing.T) {
	// Fields in key order: encodeSorted sorts them, encoding/json not.
	type row struct {
		F    float64   `json:"f"`
		I    int       `json:"i"`
		S    string    `json:"s"`
		Subs []float64 `json:"subs,omitempty"`
	}
	type doc struct {
		Plain []int   `json:"plain"`
		Rows  [][]row `json:"rows"`
	}
	var d doc
	for k := 0; k < 2; k++ {
		var rs []row
		for i := 0; i < parallelElems+k*7+3; i++ {
			r := row{I: i, F: float64(i) / 7, S: fmt.Sprintf("step %d <%d>", i, k)}
			if i == 5 {
				r.Subs = make([]float64, parallelElems+1)
				for j := range r.Subs {
					r.Subs[j] = float64(j) * 1.5
				}
			}
			rs = append(rs, r)
		}
		d.Rows = append(d.Rows, rs)
	}
	for i := 0; i < 3*parallelElems; i++ {
		d.Plain = append(d.Plain, i*i)
	}
	if g, w := encodeBoth(t, d); g != w {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("encodeSorted differs from encoding/json at byte %d of %d/%d: %q vs %q", i, len(g), len(w), g[max(0, i-40):min(len(g), i+40)], w[max(0, i-40):min(len(w), i+40)])
	}
	bad := make([]float64, parallelElems+2)
	bad[len(bad)-1] = math.NaN()
	if err := encodeSorted(io.Discard, bad); err == nil {
		t.Error("a NaN in the second half of a long list: no error")
	}
}

// TestEmptyTableSaysNone: a table without rows is written as one line in
// every format, never a header with nothing under it.
func TestEmptyTableSaysNone(t *testing.T) {
	d := &Doc{Title: "t"}
	d.h(2, T("Section"))
	d.add(Table{Head: []string{"a", "b"}})
	for _, f := range []string{"text", "md", "html"} {
		var b bytes.Buffer
		if err := Render(&b, d, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "None.") || strings.Contains(b.String(), "| a |") || strings.Contains(b.String(), "<table>") {
			t.Errorf("%s:\n%s", f, b.String())
		}
	}
}
