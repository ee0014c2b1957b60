package report

import (
	"bytes"
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
