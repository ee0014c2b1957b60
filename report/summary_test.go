package report

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"testing"
)

func TestSortRowsAndCSV(t *testing.T) {
	rows := []SummaryRow{
		{Trace: "e", Verdict: VerdictError, Reason: "bad"},
		{Trace: "n", Verdict: "no_storm"},
		{Trace: "s1", Verdict: "storm", StormTimeNs: 5},
		{Trace: "i", Verdict: "insufficient_data"},
		{Trace: "s2", Verdict: "storm", StormTimeNs: 9},
	}
	SortSummaryRows(rows)
	var order []string
	for _, r := range rows {
		order = append(order, r.Trace)
	}
	if !reflect.DeepEqual(order, []string{"s2", "s1", "i", "n", "e"}) {
		t.Errorf("order = %v", order)
	}
	var a, b bytes.Buffer
	if err := WriteSummaryCSV(&a, rows); err != nil {
		t.Fatal(err)
	}
	WriteSummaryCSV(&b, rows)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("CSV not deterministic")
	}
	var p1, p2 bytes.Buffer
	if err := WriteSummaryParquet(&p1, rows); err != nil {
		t.Fatal(err)
	}
	WriteSummaryParquet(&p2, rows)
	if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
		t.Error("Parquet not deterministic")
	}
}

// TestCSVNeutralizesFormulas: text cells a spreadsheet would evaluate
// (starting with = + - @ TAB CR) get a leading quote; numbers, negative
// ones included, stay numbers; a failed trace's figures and values a
// trace lacks are empty cells.
func TestCSVNeutralizesFormulas(t *testing.T) {
	rows := []SummaryRow{
		{Trace: "=1+2", File: "=1+2.sqlite", Verdict: "no_storm", Reason: "-healthy", DurationNs: 7, SyncP99Ns: -1.5,
			StormTimeNs: -3, UmtraceVersion: "@v", ResultSchemaVer: 2},
		{Trace: "+x", File: "\tx.sqlite", Verdict: VerdictError, Reason: "\rbad", UmtraceVersion: "v"},
		{Trace: "s", File: "s.sqlite", Verdict: "storm", Episodes: 1, WorstEpisodeNs: 5, StepP50Ns: 9, UmtraceVersion: "v"},
	}
	var b bytes.Buffer
	if err := WriteSummaryCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	cell := func(r int, h string) string { return recs[r][col[h]] }
	for _, c := range []struct {
		row     int
		h, want string
	}{
		{1, "trace_id", "'=1+2"}, {1, "file", "'=1+2.sqlite"}, {1, "reason", "'-healthy"}, {1, "umtrace_version", "'@v"},
		{1, "storm_time_ns", "-3"}, {1, "sync_p99_ns", "-1.5"}, {1, "duration_ns", "7"}, {1, "gpu_faults", "0"},
		{1, "step_p50_ns", ""}, {1, "worst_episode_ns", ""}, {1, "worst_episode_start_s", ""},
		{2, "trace_id", "'+x"}, {2, "file", "'\\x09x.sqlite"}, {2, "duration_ns", ""}, {2, "gpu_faults", ""},
		{2, "result_schema_version", ""},
		{3, "worst_episode_ns", "5"}, {3, "worst_episode_start_s", "0"}, {3, "step_p50_ns", "9"},
	} {
		if got := cell(c.row, c.h); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.h, got, c.want)
		}
	}
	if got := cell(2, "reason"); got == "" || got[0] != '\'' {
		t.Errorf("reason %q starting with CR not neutralized", got)
	}
	for _, s := range []string{"=", "+", "-", "@", "\t", "\r"} {
		if got := CSVText(s + "x"); got != "'"+Visible(s)+"x" {
			t.Errorf("CSVText(%q) = %q", s+"x", got)
		}
	}
	if got := CSVText("x=1"); got != "x=1" {
		t.Errorf("CSVText(x=1) = %q", got)
	}
}
