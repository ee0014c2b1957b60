package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile is prepended to every kernel name and NVTX range of a real
// trace: tags, markdown table and code characters, line breaks, NUL, ESC
// and an invalid UTF-8 byte.
const hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>|`tick`|\r\n\x00\x1b[31m\xff "

// TestHostileNames renders a real trace whose kernel and NVTX names (and
// file name) are hostile, in every format, and checks each stays
// well-formed: no raw ESC/CR/NUL on the terminal, intact markdown table
// rows with no raw tag outside code spans, valid UTF-8 HTML with no tag
// from the names, valid JSON.
func TestHostileNamesInReports(t *testing.T) {
	traces := archTraces(t)
	data, err := os.ReadFile(filepath.Join(traces, "torch_mlp_managed.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "evil<img src=x onerror=alert(3)>|`\x1b\xfe.sqlite")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	long := "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1<float, float, cutlass::arch::OpMultiplyAdd, cutlass::gemm::GemmShape<128, 256, 8>, cutlass::epilogue::thread::LinearCombination<float, 1, float, float>>>(T1::Params)"
	for _, q := range []string{
		`UPDATE StringIds SET value = CAST(? || value AS TEXT) WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL)`,
		`UPDATE NVTX_EVENTS SET text = CAST(? || text AS TEXT) WHERE text IS NOT NULL`,
	} {
		if _, err := db.Exec(q, []byte(hostile+long+" ")); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	out := map[string][]byte{}
	for _, f := range []string{"text", "md", "html", "json"} {
		code, stdout, stderr := archRun("analyze", path, "-f", f)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", f, code, stderr)
		}
		out[f] = []byte(stdout)
	}
	if !bytes.Contains(out["json"], []byte("cutlass::Kernel2")) {
		t.Fatal("the planted kernel names did not reach the report")
	}
	if b := out["text"]; bytes.ContainsAny(b, "\x1b\r\x00") || !utf8.Valid(b) {
		t.Error("text report has raw ESC, CR or NUL, or invalid UTF-8")
	}
	md := string(out["md"])
	if !utf8.ValidString(md) || strings.ContainsAny(md, "\x1b\r\x00") {
		t.Error("markdown has invalid UTF-8 or raw control characters")
	}
	codeSpan := regexp.MustCompile("(`+)[^`].*?[^`]?(`+)")
	unescapedPipe := regexp.MustCompile(`(^|[^\\])\|`)
	var cols int
	for i, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := len(unescapedPipe.FindAllString(l, -1))
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("markdown line %d has %d cell separators, its table %d: %q", i+1, n, cols, l)
		}
		if outside := codeSpan.ReplaceAllString(l, ""); strings.ContainsAny(outside, "<>") {
			t.Errorf("markdown line %d has a raw < or > outside code spans: %q", i+1, l)
		}
	}
	h := string(out["html"])
	low := strings.ToLower(h)
	if !utf8.ValidString(h) || strings.ContainsAny(h, "\x1b\r\x00") || strings.Contains(low, "<script") || strings.Contains(low, "<img") {
		t.Error("HTML has invalid UTF-8, raw control characters, or a tag from a name")
	}
	if !strings.Contains(h, "&lt;script&gt;") {
		t.Error("HTML does not show the names' tags as text")
	}
	if !json.Valid(out["json"]) {
		t.Error("JSON is not valid")
	}
}
